//! A hand-written SVG chart for people: per op, horizontal bars of the modeled time of the
//! fused kernel and of the eager sequence (same shape, same SoC).

/// One op's bars.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// `rms_norm float16 4096x3584`.
    pub label: String,
    pub fused_us: f64,
    /// `None`: no eager sequence for this op.
    pub eager_us: Option<f64>,
}

const FUSED_COLOUR: &str = "#1f77b4";
const EAGER_COLOUR: &str = "#ff7f0e";

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A tick step of 1, 2 or 5 times a power of ten giving about five ticks up to `max`.
fn tick_step(max: f64) -> f64 {
    let raw = (max / 5.0).max(1e-9);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * magnitude).find(|s| *s >= raw).unwrap_or(10.0 * magnitude)
}

fn fmt_us(us: f64) -> String {
    if us >= 100.0 {
        format!("{us:.0} µs")
    } else if us >= 10.0 {
        format!("{us:.1} µs")
    } else {
        format!("{us:.2} µs")
    }
}

/// The chart: `title` on top, one group of two bars per entry, a µs axis, a legend.
pub fn chart(title: &str, subtitle: &str, bars: &[Bar]) -> String {
    let label_w = 370.0;
    let plot_w = 560.0;
    let right = 90.0;
    let top = 84.0;
    let bar_h = 16.0;
    let group_h = 2.0 * bar_h + 14.0;
    let height = top + group_h * bars.len() as f64 + 50.0;
    let width = label_w + plot_w + right;
    let max = bars.iter().map(|b| b.fused_us.max(b.eager_us.unwrap_or(0.0))).fold(0.0, f64::max).max(1e-3);
    let step = tick_step(max);
    let axis_max = (max / step).ceil() * step;
    let x = |us: f64| label_w + us / axis_max * plot_w;

    let mut s = String::new();
    s.push_str(&format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"sans-serif\" font-size=\"12\">\n"
    ));
    s.push_str(&format!("<rect width=\"{width:.0}\" height=\"{height:.0}\" fill=\"white\"/>\n"));
    s.push_str(&format!(
        "<text x=\"{:.0}\" y=\"24\" font-size=\"16\" font-weight=\"bold\">{}</text>\n",
        12.0,
        escape(title)
    ));
    s.push_str(&format!("<text x=\"12\" y=\"44\" fill=\"#555\">{}</text>\n", escape(subtitle)));
    // Legend, under the subtitle.
    for (i, (colour, name)) in
        [(FUSED_COLOUR, "fused kernel (1 launch)"), (EAGER_COLOUR, "eager PyTorch sequence")]
            .iter()
            .enumerate()
    {
        let lx = label_w + 200.0 * i as f64;
        s.push_str(&format!("<rect x=\"{lx:.0}\" y=\"54\" width=\"12\" height=\"12\" fill=\"{colour}\"/>\n"));
        s.push_str(&format!("<text x=\"{:.0}\" y=\"65\">{name}</text>\n", lx + 18.0));
    }
    // Grid and axis.
    let bottom = top + group_h * bars.len() as f64;
    let ticks = (axis_max / step).round() as u32;
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    for k in 0..=ticks {
        let tick = f64::from(k) * step;
        let tx = x(tick);
        s.push_str(&format!(
            "<line x1=\"{tx:.1}\" y1=\"{top:.0}\" x2=\"{tx:.1}\" y2=\"{bottom:.0}\" stroke=\"#ddd\"/>\n"
        ));
        s.push_str(&format!(
            "<text x=\"{tx:.1}\" y=\"{:.0}\" text-anchor=\"middle\" fill=\"#555\">{tick:.decimals$}</text>\n",
            bottom + 16.0
        ));
    }
    s.push_str(&format!(
        "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\">modeled device time, µs</text>\n",
        label_w + plot_w / 2.0,
        bottom + 36.0
    ));
    // Bars.
    for (i, b) in bars.iter().enumerate() {
        let gy = top + group_h * i as f64 + 4.0;
        s.push_str(&format!(
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{}</text>\n",
            label_w - 8.0,
            gy + bar_h + 4.0,
            escape(&b.label)
        ));
        let mut row = |y: f64, us: Option<f64>, colour: &str| match us {
            Some(us) => {
                s.push_str(&format!(
                    "<rect x=\"{label_w:.0}\" y=\"{y:.0}\" width=\"{:.1}\" height=\"{bar_h:.0}\" fill=\"{colour}\"/>\n",
                    (x(us) - label_w).max(0.5)
                ));
                s.push_str(&format!(
                    "<text x=\"{:.1}\" y=\"{:.0}\">{}</text>\n",
                    x(us) + 4.0,
                    y + bar_h - 4.0,
                    fmt_us(us)
                ));
            }
            None => s.push_str(&format!(
                "<text x=\"{:.0}\" y=\"{:.0}\" fill=\"#999\">no eager sequence</text>\n",
                label_w + 4.0,
                y + bar_h - 4.0
            )),
        };
        row(gy, Some(b.fused_us), FUSED_COLOUR);
        row(gy + bar_h + 2.0, b.eager_us, EAGER_COLOUR);
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(354.0), 100.0);
        assert_eq!(tick_step(40.0), 10.0);
        assert_eq!(tick_step(7.0), 2.0);
    }

    #[test]
    fn the_chart_has_a_bar_per_value_and_escapes_labels() {
        let bars = vec![
            Bar { label: "a<b".into(), fused_us: 40.0, eager_us: Some(354.0) },
            Bar { label: "c".into(), fused_us: 5.0, eager_us: None },
        ];
        let svg = chart("t", "s", &bars);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("a&lt;b"));
        // Three bars and the fused legend swatch start at the plot's left edge.
        assert_eq!(svg.matches("<rect x=\"370\" y=").count(), 4);
        assert!(svg.contains("no eager sequence"));
        assert!(svg.contains("354 µs"));
    }
}
