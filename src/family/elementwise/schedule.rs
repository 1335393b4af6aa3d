//! Barrier placement for a lowered program: the vector pipe does not order its own memory
//! accesses, so a call that reads or writes a buffer an earlier call wrote, or writes one an
//! earlier call read, needs a PipeBarrier<PIPE_V> between them; independent calls need none.
//! Each barrier costs the pipeline's depth (16 cycles mid in `perf::cycles`, against ~50 for a
//! call over a tile), and a program from `lower` is a few interleavable chains (a backward op's
//! sigmoid, its series near a root, its outputs' products), so the calls are grouped into
//! levels, each call one level after the latest call it depends on (RAW, WAR or WAW on any
//! buffer), and a barrier closes each level: as many barriers as the longest dependency chain.
//! The register plan is unchanged (the WAR/WAW edges keep every reuse in order), so the values
//! are the program's. The twin's pipe checker (runtime_pipes.cpp) stops a kernel in which a
//! dependent pair shares a level.
//!
//! The guard's rescue (`Guard::at` on) is a segment of its own: its calls stay behind the
//! guard's ReduceMin and branch.

use super::lower::{Call, Program};

/// Regroups `program.calls` into barrier-separated levels of independent calls.
pub fn schedule(mut program: Program) -> Program {
    let at = program.guard.as_ref().map_or(program.calls.len(), |g| g.at);
    let mut rest = program.calls.split_off(at);
    let mut calls = levels(std::mem::take(&mut program.calls));
    calls.append(&mut levels(std::mem::take(&mut rest)));
    program.calls = calls;
    program
}

/// How many independent calls the SSA order pairs per level before registers are planned
/// ([`interleave`]): two chains side by side halve a serial program's barriers; each more
/// keeps another value alive (a tile of float32 per call: the tile shrinks).
pub const WIDTH: usize = 2;

/// A program order of `n` SSA values for the register planner: list scheduling by levels of at
/// most [`WIDTH`] values, each level's values chosen among the ready ones (every operand
/// computed by an earlier level) by the longest chain of values still to come after them, then
/// by their index. `preds[i]`: the values (< n) value i reads. The planner then gives the values
/// of a level registers no other value of the level touches, so [`schedule`] can keep them
/// between the same two barriers.
pub fn interleave(preds: &[Vec<usize>]) -> Vec<usize> {
    let n = preds.len();
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, ps) in preds.iter().enumerate() {
        for &p in ps {
            succs[p].push(i);
        }
    }
    // The longest chain from each value to the end (values come in a topological order).
    let mut height = vec![0usize; n];
    for i in (0..n).rev() {
        height[i] = succs[i].iter().map(|&s| height[s] + 1).max().unwrap_or(0);
    }
    let mut missing: Vec<usize> = preds.iter().map(Vec::len).collect();
    let mut ready: Vec<usize> = (0..n).filter(|&i| missing[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while !ready.is_empty() {
        ready.sort_by_key(|&i| (std::cmp::Reverse(height[i]), i));
        let level: Vec<usize> = ready.drain(..WIDTH.min(ready.len())).collect();
        for &i in &level {
            order.push(i);
            for &s in &succs[i] {
                missing[s] -= 1;
                if missing[s] == 0 {
                    ready.push(s);
                }
            }
        }
    }
    assert_eq!(order.len(), n, "the values form no cycle");
    order
}

/// Of two register plans of one body, the one whose barriers and tile the cost model prices
/// lower ([`cycles_per_element`]); the first on a tie.
pub fn cheaper(first: Program, second: Program, n_inputs: usize) -> Program {
    let cost = |p: &Program| cycles_per_element(&schedule(p.clone()), n_inputs);
    if cost(&second) < cost(&first) {
        second
    } else {
        first
    }
}

/// The vector cycles per element of a scheduled program at the mid level of the cycle table
/// (`perf::cycles`), with every input and output 16-bit (the model dtypes: float32 moves twice
/// the bytes, so its tiles are smaller and its barriers cost more, in the same proportion for
/// both plans): the calls' repeats and issue, the casts, and one pipeline drain per barrier,
/// over the tile the TilingFunc plans (templates/host/elementwise.cpp.j2: its UB bytes per
/// element with the same terms).
pub fn cycles_per_element(p: &Program, n_inputs: usize) -> f64 {
    use crate::plan::cycles::{ranges, VecClass, REPEAT_BYTES};
    const SIZE: f64 = 2.0;
    const BUFFERS: f64 = 2.0;
    let outputs = p.results.len() as f64;
    let guard = if p.guard.is_some() { 1.0 / 8.0 } else { 0.0 };
    let bytes = 4.0 * p.temps as f64
        + p.masks as f64 / 8.0
        + guard
        + n_inputs as f64 * (BUFFERS * SIZE + 4.0)
        + outputs * BUFFERS * SIZE;
    let budget = (crate::plan::soc::UB_PLAN_BYTES_A2 - 32) as f64;
    let lanes = REPEAT_BYTES / 4.0;
    let tile = ((budget / bytes) / lanes).floor().max(1.0) * lanes;
    let repeats = tile / lanes;
    let issue = ranges::V_ISSUE.mid;
    let call = |api: &str| {
        let cpr = match VecClass::of(api) {
            VecClass::Simple => 1.0,
            VecClass::Transcendental => ranges::CPR_TRANSCENDENTAL.mid,
            VecClass::Reduce | VecClass::WholeReduce => ranges::CPR_REDUCE.mid,
            VecClass::Gather => ranges::CPR_GATHER.mid,
        };
        repeats * cpr + issue
    };
    let calls: f64 = p.calls.iter().map(|c| call(c.call.split('(').next().unwrap_or(""))).sum();
    let casts = (n_inputs as f64 + outputs) * call("Cast");
    let barriers = p.calls.iter().filter(|c| c.barrier).count() as f64 * ranges::V_LATENCY.mid;
    // The guard's ReduceMin is read by the scalar unit: a V -> S round trip drains the pipe.
    let guard_wait = if p.guard.is_some() { ranges::FLAG_LATENCY.mid + ranges::V_LATENCY.mid } else { 0.0 };
    (calls + casts + barriers + guard_wait) / tile
}

/// Whether `later` must wait for `earlier` to complete.
fn depends(later: &Call, earlier: &Call) -> bool {
    let touches = |names: &[String], of: &[String]| names.iter().any(|n| of.contains(n));
    touches(&earlier.writes, &later.reads)
        || touches(&earlier.writes, &later.writes)
        || touches(&earlier.reads, &later.writes)
}

/// The calls ordered by level (program order within one), the last of each level followed by a
/// barrier.
fn levels(calls: Vec<Call>) -> Vec<Call> {
    let mut level = vec![0usize; calls.len()];
    for i in 0..calls.len() {
        level[i] = (0..i).filter(|&j| depends(&calls[i], &calls[j])).map(|j| level[j] + 1).max().unwrap_or(0);
    }
    let mut order: Vec<usize> = (0..calls.len()).collect();
    order.sort_by_key(|&i| (level[i], i));
    let mut calls: Vec<Option<Call>> = calls.into_iter().map(Some).collect();
    let mut out: Vec<Call> = Vec::with_capacity(calls.len());
    for (k, &i) in order.iter().enumerate() {
        let mut c = calls[i].take().expect("each call once");
        c.barrier = order.get(k + 1).is_none_or(|&next| level[next] != level[i]);
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(text: &str, reads: &[&str], writes: &[&str]) -> Call {
        Call {
            call: text.into(),
            note: String::new(),
            reads: reads.iter().map(|s| s.to_string()).collect(),
            writes: writes.iter().map(|s| s.to_string()).collect(),
            barrier: true,
        }
    }

    fn shape(calls: &[Call]) -> Vec<(&str, bool)> {
        calls.iter().map(|c| (c.call.as_str(), c.barrier)).collect()
    }

    #[test]
    fn independent_chains_share_levels_and_every_hazard_keeps_a_barrier() {
        let calls = vec![
            call("a1", &["in0"], &["t0"]),
            call("a2", &["t0"], &["t0"]),       // RAW on t0
            call("b1", &["in1"], &["t1"]),      // independent of a
            call("b2", &["t1"], &["t1"]),       // RAW on t1
            call("w", &["t1"], &["in0"]),       // WAR on in0 (a1 reads it), RAW on t1
            call("z", &["t0", "in0"], &["t2"]), // RAW on t0 (a2) and in0 (w)
        ];
        let out = levels(calls);
        assert_eq!(
            shape(&out),
            [("a1", false), ("b1", true), ("a2", false), ("b2", true), ("w", true), ("z", true)]
        );
    }

    #[test]
    fn a_chain_keeps_a_barrier_after_every_call() {
        let calls =
            vec![call("x", &["in0"], &["t0"]), call("y", &["t0"], &["t1"]), call("z", &["t1"], &["t0"])];
        assert_eq!(shape(&levels(calls)), [("x", true), ("y", true), ("z", true)]);
    }

    fn program(calls: Vec<Call>, temps: usize) -> Program {
        Program {
            calls,
            temps,
            masks: 0,
            results: vec!["t0".into()],
            scalars: Vec::new(),
            attrs_used: Vec::new(),
            guard: None,
        }
    }

    /// Two chains of `len` Muls over registers t0 and t1, as one chain after the other (every
    /// call behind a barrier) or paired (one barrier per pair).
    fn two_chains(len: usize, paired: bool, temps: usize) -> Program {
        let mut calls = Vec::new();
        for k in 0..2 * len {
            let r = if paired { format!("t{}", k % 2) } else { format!("t{}", k / len) };
            let mut c = call("Mul(x, x, x, n);", &[&r], &[&r]);
            c.barrier = !paired || k % 2 == 1;
            calls.push(c);
        }
        program(calls, temps)
    }

    #[test]
    fn the_cost_counts_barriers_and_the_tile() {
        // 16-bit in and out: 1 input (2 * 2 + 4 bytes), 1 output (2 * 2), 4 bytes a temp.
        let serial = cycles_per_element(&two_chains(8, false, 2), 1);
        let paired = cycles_per_element(&two_chains(8, true, 2), 1);
        // 16 calls of R + 2 cycles, 2 casts, and 16 or 8 barriers of 16 cycles, over the tile:
        // 20 bytes an element, 188384 / 20 -> 9419 -> 147 repeats of 64 (9408 elements).
        let r = 147.0;
        let expect = |barriers: f64| (18.0 * (r + 2.0) + barriers * 16.0) / (r * 64.0);
        assert!((serial - expect(16.0)).abs() < 1e-12, "{serial} {}", expect(16.0));
        assert!((paired - expect(8.0)).abs() < 1e-12, "{paired} {}", expect(8.0));
        // Eight more temporaries (52 bytes an element) cost more than the barriers they save.
        let wide = two_chains(8, true, 10);
        assert!(cycles_per_element(&wide, 1) > serial);
        assert_eq!(cheaper(two_chains(8, false, 2), wide.clone(), 1).temps, 2);
        assert_eq!(cheaper(wide, two_chains(8, true, 2), 1).temps, 2);
    }

    #[test]
    fn a_write_after_write_is_ordered() {
        let calls = vec![call("x", &["in0"], &["t0"]), call("y", &["in1"], &["t0"])];
        assert_eq!(shape(&levels(calls)), [("x", true), ("y", true)]);
    }

    #[test]
    fn a_write_after_read_is_ordered() {
        // y overwrites the register x reads: x must have read it first.
        let calls = vec![call("x", &["t0"], &["t1"]), call("y", &["in1"], &["t0"])];
        assert_eq!(shape(&levels(calls)), [("x", true), ("y", true)]);
    }

    #[test]
    fn interleave_pairs_the_longest_chains_and_keeps_dependencies() {
        // Two chains 0 -> 1 -> 2 and 3 -> 4, and 5 reading 2 and 4.
        let preds = vec![vec![], vec![0], vec![1], vec![], vec![3], vec![2, 4]];
        let order = interleave(&preds);
        assert_eq!(order, [0, 3, 1, 4, 2, 5]);
        let at = |v: usize| order.iter().position(|&x| x == v).unwrap();
        for (i, ps) in preds.iter().enumerate() {
            assert!(ps.iter().all(|&p| at(p) < at(i)), "{order:?}");
        }
    }
}
