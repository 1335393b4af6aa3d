// The per-core counters of a launch and their JSON (runtime.h write_counters_json).
#include "opgen_twin/runtime_state.h"

namespace opgen_twin {
namespace rt {

void json_map(JsonWriter& json, const char* key, const std::map<std::string, uint64_t, std::less<>>& m) {
    json.key(key).begin_object();
    for (const auto& kv : m) {
        json.key(kv.first).uint(kv.second);
    }
    json.end_object();
}

}  // namespace rt

using namespace rt;

// The keys are the fields of CoreCounters in src/verify/protocol.rs (tests/twin_protocol.rs
// compares the two lists).
void write_counters(JsonWriter& json) {
    json.begin_object();
    json.key("cores").begin_array();
    for (const auto& kv : g_counters) {
        const Counters& c = kv.second;
        json.begin_object();
        json.key("core").integer(kv.first);
        json_map(json, "gm_read_bytes", c.gm_read);
        json_map(json, "gm_write_bytes", c.gm_write);
        json.key("transfers_in").uint(c.transfers_in);
        json.key("transfer_in_bytes").uint(c.transfer_in_bytes);
        json.key("transfers_out").uint(c.transfers_out);
        json.key("transfer_out_bytes").uint(c.transfer_out_bytes);
        json_map(json, "vector_instructions", c.vec_instr);
        json_map(json, "vector_elements", c.vec_elems);
        json.key("scalar_gm_accesses").uint(c.scalar_gm);
        json.key("scalar_ub_accesses").uint(c.scalar_ub);
        json.key("ub_high_water_bytes").uint(c.ub_high);
        json.key("queue_handoffs").uint(c.handoffs);
        json.key("barriers").uint(c.barriers);
        json.key("copy_in_overlapped").uint(c.copy_in_overlapped);
        json.key("copy_in_total").uint(c.copy_in_total);
        json.key("copy_in_queues").uint(c.copy_in_queues);
        json.key("transfer_in_min_bytes").uint(c.transfer_in_min);
        json.key("transfer_in_max_bytes").uint(c.transfer_in_max);
        json.key("transfer_out_min_bytes").uint(c.transfer_out_min);
        json.key("transfer_out_max_bytes").uint(c.transfer_out_max);
        json_map(json, "gm_read_transfers", c.read_transfers);
        json_map(json, "gm_write_transfers", c.write_transfers);
        json_map(json, "flag_waits", c.flag_waits);
        json_map(json, "hidden_flag_waits", c.hidden_waits);
        json.end_object();
    }
    json.end_array();
    json.end_object();
}

void write_counters_json(FILE* out) {
    JsonWriter json;
    write_counters(json);
    json.flush(out);
    std::fputc('\n', out);
}

uint64_t float_atomic_adds(int64_t core) {
    const auto it = g_counters.find(core);
    return it == g_counters.end() ? 0 : it->second.float_atomic_adds;
}

void reset_counters() {
    g_counters.clear();
    if (g_core->active) g_core->counters = &g_counters[g_core->idx];
}

namespace kern {

// ---------------------------------------------------------------- counters

void count_level0(const char* api, uint64_t elements) {
    Counters& c = counters();
    auto it = c.vec_instr.find(api);
    if (it == c.vec_instr.end()) it = c.vec_instr.emplace(api, 0).first;
    ++it->second;
    c.vec_elems[api] += elements;
    trace::vector_elements(elements);
}

void count_vector(const char* api, uint64_t elements) {
    count_level0(api, elements);
    Core& c = *g_core;
    c.vmask_known = false;
    c.vmask_at = c.pipes.cur;
}

namespace {
// Smallest and largest transfer so far (0 = none yet).
void note_transfer_size(uint64_t bytes, uint64_t& min, uint64_t& max) {
    if (min == 0 || bytes < min) min = bytes;
    if (bytes > max) max = bytes;
}
}  // namespace

void count_copy_in(const char* gm_name, uint64_t bytes, const TensorRef& dst) {
    Counters& c = counters();
    ++c.transfers_in;
    c.transfer_in_bytes += bytes;
    c.gm_read[gm_name] += bytes;
    ++c.read_transfers[gm_name];
    note_transfer_size(bytes, c.transfer_in_min, c.transfer_in_max);
    trace::transfer(gm_name, bytes);
    const BufRec& b = g_core->bufs[size_t(dst.buf)];
    if (b.queue < 0) return;
    QueRec& q = g_core->ques[size_t(b.queue)];
    // A tile may be filled by several copies (a transpose gathers strided runs): a copy into the
    // allocation the queue's previous copy-in filled continues that tile's fill. It is issued
    // right behind the tile's first copy, so it waits for nothing the first one did not.
    if (q.last_copy_in == dst.buf && q.last_copy_gen == b.gen) return;
    ++c.copy_in_total;
    // Double-buffering evidence. The twin runs a core's instructions one after another, but on the
    // NPU the scalar unit only issues them: MTE2 runs the copy-in of tile i+1 as soon as its buffer
    // is free, while the vector pipe still computes tile i. That holds when the copy goes into a
    // different buffer of the queue than the previous copy-in did (so it need not wait for tile
    // i's FreeTensor); with one buffer, or the same buffer again, MTE2 waits for the vector pipe.
    // The first copy-in of each queue has no predecessor and is never counted.
    if (q.last_copy_in < 0) {
        ++c.copy_in_queues;
    } else if (q.num >= 2 && q.last_copy_in != dst.buf) {
        ++c.copy_in_overlapped;
    }
    q.last_copy_in = dst.buf;
    q.last_copy_gen = b.gen;
}

void count_copy_out(const char* gm_name, uint64_t bytes) {
    Counters& c = counters();
    ++c.transfers_out;
    c.transfer_out_bytes += bytes;
    c.gm_write[gm_name] += bytes;
    ++c.write_transfers[gm_name];
    note_transfer_size(bytes, c.transfer_out_min, c.transfer_out_max);
    trace::transfer(gm_name, bytes);
}

void count_scalar_gm(const char* gm_name, uint64_t bytes, bool write) {
    Counters& c = counters();
    ++c.scalar_gm;
    trace::scalar_access(true);
    (write ? c.gm_write : c.gm_read)[gm_name] += bytes;
}

void count_scalar_ub() {
    ++counters().scalar_ub;
    trace::scalar_access(false);
}

}  // namespace kern
}  // namespace opgen_twin
