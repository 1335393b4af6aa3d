//! The twin's event trace of one launch (kernels/twin/include/opgen_twin/trace.h), read with typed
//! structs: every field is required and no other is accepted, so a change on one side of the
//! protocol fails to parse instead of reading as 0. [`lower`] turns it into the simulator's
//! [`Op`]s.

use super::sim::{Dir, Op, Pipe};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Why a trace could not be read.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceError {
    Parse(String),
    Unknown { core: u64, what: &'static str, name: String },
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceError::Parse(e) => write!(f, "the twin's event trace: {e}"),
            TraceError::Unknown { core, what, name } => {
                write!(f, "the twin's event trace, core {core}: unknown {what} `{name}`")
            }
        }
    }
}

impl std::error::Error for TraceError {}

/// Names borrow from the trace text (a long launch has millions of events).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceDoc<'a> {
    #[serde(borrow)]
    pub cores: Vec<CoreTrace<'a>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreTrace<'a> {
    pub core: u64,
    #[serde(borrow)]
    pub events: Vec<Event<'a>>,
}

/// One event of a core, in program order, written `{"<kind>":{fields}}` (external tagging: read
/// without buffering each object, unlike an internal `"op"` tag).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Event<'a> {
    /// A vector instruction and the elements the twin counted for it.
    Vec {
        #[serde(borrow)]
        api: Cow<'a, str>,
        elements: u64,
    },
    /// A GM↔UB transfer: `blocks` bursts of `block_bytes` (DataCopy's blockCount/blockLen).
    Dma {
        #[serde(borrow)]
        pipe: Cow<'a, str>,
        #[serde(borrow)]
        api: Cow<'a, str>,
        #[serde(borrow)]
        gm: Cow<'a, str>,
        bytes: u64,
        blocks: u64,
        block_bytes: u64,
        gm_offset: u64,
    },
    /// An instruction of the scalar unit and its scalar memory accesses.
    Scalar {
        #[serde(borrow)]
        api: Cow<'a, str>,
        gm_accesses: u32,
        ub_accesses: u32,
    },
    Set {
        #[serde(borrow)]
        event: Cow<'a, str>,
        key: i64,
    },
    Wait {
        #[serde(borrow)]
        event: Cow<'a, str>,
        key: i64,
    },
    /// A SetFlag/WaitFlag pair inside an AscendC API.
    Hidden {
        #[serde(borrow)]
        event: Cow<'a, str>,
    },
    Barrier {
        #[serde(borrow)]
        pipe: Cow<'a, str>,
    },
}

pub fn parse(text: &str) -> Result<TraceDoc<'_>, TraceError> {
    serde_json::from_str(text).map_err(|e| TraceError::Parse(e.to_string()))
}

fn pipe(core: u64, name: &str) -> Result<Pipe, TraceError> {
    Pipe::parse(name).ok_or_else(|| TraceError::Unknown { core, what: "pipe", name: name.to_string() })
}

/// `MTE2_V` → (MTE2, V); events between pipes the model does not simulate (cube, MTE1, FIX)
/// are refused: the kernels here are vector-only.
pub fn event_pipes(core: u64, event: &str) -> Result<(Pipe, Pipe), TraceError> {
    let unknown = || TraceError::Unknown { core, what: "HardEvent", name: event.to_string() };
    let (a, b) = event.split_once('_').ok_or_else(unknown)?;
    Ok((Pipe::parse(a).ok_or_else(unknown)?, Pipe::parse(b).ok_or_else(unknown)?))
}

/// Per GM tensor, the fraction of its reads that hit L2: the bytes read beyond the tensor's size
/// (`sizes`, bytes) were read before, by this or another core, and the 192 MiB L2 of the 910B
/// holds them (every model-shape tensor here is smaller). A tensor of unknown size has no hits.
pub fn l2_hit_fractions(doc: &TraceDoc<'_>, sizes: &BTreeMap<String, u64>) -> BTreeMap<String, f64> {
    let mut read: BTreeMap<&str, u64> = BTreeMap::new();
    for c in &doc.cores {
        for e in &c.events {
            if let Event::Dma { pipe, gm, bytes, .. } = e {
                if pipe == "MTE2" {
                    *read.entry(gm.as_ref()).or_default() += bytes;
                }
            }
        }
    }
    read.into_iter()
        .map(|(name, total)| {
            let size = sizes.get(name).copied().unwrap_or(total);
            let hit = if total == 0 { 0.0 } else { total.saturating_sub(size) as f64 / total as f64 };
            (name.to_string(), hit)
        })
        .collect()
}

/// The simulator's program of each core.
pub fn lower(doc: &TraceDoc<'_>, l2_hits: &BTreeMap<String, f64>) -> Result<Vec<Vec<Op>>, TraceError> {
    let mut out = Vec::with_capacity(doc.cores.len());
    for c in &doc.cores {
        let mut ops = Vec::with_capacity(c.events.len());
        for e in &c.events {
            ops.push(match e {
                Event::Vec { api, elements } => {
                    Op::Vector { api: super::cycles::VecClass::of(api), elements: *elements }
                }
                Event::Dma { pipe: p, gm, bytes, blocks, block_bytes, gm_offset, .. } => {
                    let dir = match pipe(c.core, p)? {
                        Pipe::Mte2 => Dir::In,
                        Pipe::Mte3 => Dir::Out,
                        _ => {
                            return Err(TraceError::Unknown {
                                core: c.core,
                                what: "DMA pipe",
                                name: p.to_string(),
                            })
                        }
                    };
                    let aligned = *gm_offset % 512 == 0 && (*blocks <= 1 || *block_bytes % 512 == 0);
                    Op::Dma {
                        dir,
                        bytes: *bytes,
                        blocks: (*blocks).max(1),
                        aligned,
                        l2_hit: if dir == Dir::In {
                            l2_hits.get(gm.as_ref()).copied().unwrap_or(0.0)
                        } else {
                            0.0
                        },
                    }
                }
                Event::Scalar { gm_accesses, ub_accesses, .. } => {
                    Op::Scalar { gm: u64::from(*gm_accesses), ub: u64::from(*ub_accesses) }
                }
                Event::Set { event, key } => {
                    let (from, to) = event_pipes(c.core, event)?;
                    Op::Set { from, to, key: *key }
                }
                Event::Wait { event, key } => {
                    let (from, to) = event_pipes(c.core, event)?;
                    Op::Wait { from, to, key: *key }
                }
                Event::Hidden { event } => {
                    let (from, to) = event_pipes(c.core, event)?;
                    Op::Hidden { from, to }
                }
                Event::Barrier { pipe: p } if p.as_ref() == "ALL" => Op::Barrier(None),
                Event::Barrier { pipe: p } => Op::Barrier(Some(pipe(c.core, p)?)),
            });
        }
        out.push(ops);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_parses_and_an_unknown_field_or_event_is_refused() {
        let text = r#"{"cores":[{"core":0,"events":[
            {"dma":{"pipe":"MTE2","api":"DataCopyPad","gm":"x","bytes":1024,"blocks":2,"block_bytes":512,"gm_offset":0}},
            {"set":{"event":"MTE2_V","key":1000003}},{"wait":{"event":"MTE2_V","key":1000003}},
            {"vec":{"api":"ReduceSum","elements":256}},{"hidden":{"event":"V_S"}},
            {"scalar":{"api":"LocalTensor::GetValue","gm_accesses":0,"ub_accesses":1}},
            {"barrier":{"pipe":"V"}},{"barrier":{"pipe":"ALL"}}]}]}"#;
        let doc = parse(text).unwrap();
        assert_eq!(doc.cores[0].events.len(), 8);
        let ops = lower(&doc, &BTreeMap::new()).unwrap();
        assert_eq!(ops[0][0], Op::Dma { dir: Dir::In, bytes: 1024, blocks: 2, aligned: true, l2_hit: 0.0 });
        assert_eq!(ops[0][1], Op::Set { from: Pipe::Mte2, to: Pipe::V, key: 1000003 });
        assert_eq!(ops[0][7], Op::Barrier(None));
        let extra = text.replace(r#""key":1000003}},{"wait""#, r#""key":1000003,"pipe":"V"}},{"wait""#);
        assert_ne!(extra, text);
        assert!(parse(&extra).is_err());
        // An event kind the reader does not know, and the old internally tagged spelling.
        assert!(parse(r#"{"cores":[{"core":0,"events":[{"cube":{"api":"Mmad"}}]}]}"#).is_err());
        assert!(parse(r#"{"cores":[{"core":0,"events":[{"op":"hidden","event":"V_S"}]}]}"#).is_err());
        let cube = parse(r#"{"cores":[{"core":3,"events":[{"hidden":{"event":"M_FIX"}}]}]}"#).unwrap();
        let err = lower(&cube, &BTreeMap::new()).unwrap_err();
        assert_eq!(err.to_string(), "the twin's event trace, core 3: unknown HardEvent `M_FIX`");
    }

    #[test]
    fn reads_beyond_a_tensors_size_are_l2_hits() {
        // gamma (1 KiB) read by 4 cores: 3 of its 4 reads were read before.
        let core = |i: u64| CoreTrace {
            core: i,
            events: vec![Event::Dma {
                pipe: "MTE2".into(),
                api: "DataCopy".into(),
                gm: "gamma".into(),
                bytes: 1024,
                blocks: 1,
                block_bytes: 1024,
                gm_offset: 0,
            }],
        };
        let doc = TraceDoc { cores: (0..4).map(core).collect() };
        let hits = l2_hit_fractions(&doc, &[("gamma".to_string(), 1024)].into());
        approx::assert_abs_diff_eq!(hits["gamma"], 0.75, epsilon = 1e-12);
    }
}
