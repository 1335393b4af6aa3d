// The launch's event trace (opgen_twin/trace.h): recorded by hooks in runtime.cpp and the copy
// API, written as JSON once the launch has run. Kept apart from runtime.cpp so that the
// happens-before checker and the trace evolve independently.
#include "opgen_twin/trace.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "opgen_twin/json_writer.h"
#include "opgen_twin/runtime.h"

namespace opgen_twin {
namespace trace {

const bool g_on = [] {
    const char* v = std::getenv("OPGEN_TWIN_TRACE");
    return v != nullptr && v[0] != '\0';
}();

namespace {

enum class Kind : uint8_t { Instr, Set, Wait, Hidden, Barrier };

// Names are string literals of the twin (API names, HardEvent names) or GM buffer names that
// live until the launch's GM is freed, after write_launch.
struct Event {
    Kind kind = Kind::Instr;
    int pipe = 0;
    const char* name = "";  // API, event or pipe name
    const char* gm = nullptr;
    uint64_t amount = 0;  // elements (V) or bytes (MTE)
    uint64_t blocks = 0, block_bytes = 0, gm_offset = 0;
    uint32_t gm_acc = 0, ub_acc = 0;
    int64_t key = 0;
};

std::map<int64_t, std::vector<Event>> g_cores;
std::vector<Event>* g_cur = nullptr;
int64_t g_instr = -1;  // index of the running instruction in *g_cur

Event* running() {
    if (g_cur == nullptr || g_instr < 0) return nullptr;
    return &(*g_cur)[size_t(g_instr)];
}

const char* pipe_label(int p) {
    static const char* const names[] = {"S", "V", "MTE2", "MTE3", "MTE1", "M", "FIX"};
    return p >= 0 && p < 7 ? names[p] : "?";
}

// One event as `{"<kind>":{fields}}` (serde's external tagging: the reader dispatches on the key
// without buffering the object, which matters for traces of millions of events). The keys are
// the fields of src/perf/trace.rs's event types.
void write_event(JsonWriter& json, const Event& e) {
    json.begin_object();
    switch (e.kind) {
        case Kind::Instr:
            if (e.pipe == 1) {
                json.key("vec").begin_object().key("api").string(e.name).key("elements").uint(e.amount);
            } else if (e.pipe == 2 || e.pipe == 3) {
                json.key("dma").begin_object().key("pipe").string(pipe_label(e.pipe)).key("api").string(e.name);
                json.key("gm").string(e.gm != nullptr ? e.gm : "");
                json.key("bytes").uint(e.amount).key("blocks").uint(e.blocks).key("block_bytes").uint(e.block_bytes);
                json.key("gm_offset").uint(e.gm_offset);
            } else {
                json.key("scalar").begin_object().key("api").string(e.name);
                json.key("gm_accesses").uint(e.gm_acc).key("ub_accesses").uint(e.ub_acc);
            }
            break;
        case Kind::Set:
        case Kind::Wait:
            json.key(e.kind == Kind::Set ? "set" : "wait").begin_object().key("event").string(e.name);
            json.key("key").integer(e.key);
            break;
        case Kind::Hidden: json.key("hidden").begin_object().key("event").string(e.name); break;
        case Kind::Barrier: json.key("barrier").begin_object().key("pipe").string(e.name); break;
    }
    json.end_object().end_object();
}

}  // namespace

void core_begin(int64_t idx) {
    if (!g_on) return;
    g_cur = &g_cores[idx];
    g_cur->clear();
    g_instr = -1;
}

void core_resume(int64_t idx) {
    if (!g_on) return;
    g_cur = &g_cores[idx];
    g_instr = -1;
}

void instruction(int pipe, const char* api) {
    if (!g_on || g_cur == nullptr) return;
    Event e;
    e.kind = Kind::Instr;
    e.pipe = pipe;
    e.name = api;
    g_cur->push_back(e);
    g_instr = int64_t(g_cur->size()) - 1;
}

void vector_elements(uint64_t n) {
    if (!g_on) return;
    if (Event* e = running()) e->amount += n;
}

void transfer(const char* gm, uint64_t bytes) {
    if (!g_on) return;
    if (Event* e = running()) {
        e->gm = gm;
        e->amount += bytes;
    }
}

void dma_shape(uint64_t blocks, uint64_t block_bytes, const void* gm) {
    if (!g_on) return;
    if (Event* e = running()) {
        e->blocks += blocks;
        e->block_bytes = block_bytes;
        const GmBuffer* b = gm_find(gm, 1);
        e->gm_offset = b != nullptr ? uint64_t(static_cast<const uint8_t*>(gm) - b->base) : 0;
    }
}

void scalar_access(bool gm) {
    if (!g_on) return;
    if (Event* e = running()) ++(gm ? e->gm_acc : e->ub_acc);
}

void flag(bool set, const char* event, int64_t key) {
    if (!g_on || g_cur == nullptr) return;
    Event e;
    e.kind = set ? Kind::Set : Kind::Wait;
    e.name = event;
    e.key = key;
    g_cur->push_back(e);
}

void hidden(const char* event) {
    if (!g_on || g_cur == nullptr) return;
    Event e;
    e.kind = Kind::Hidden;
    e.name = event;
    g_cur->push_back(e);
}

void barrier(const char* pipe) {
    if (!g_on || g_cur == nullptr) return;
    Event e;
    e.kind = Kind::Barrier;
    e.name = pipe;
    g_cur->push_back(e);
}

void write_launch() {
    if (!g_on) return;
    const char* path = std::getenv("OPGEN_TWIN_TRACE");
    FILE* out = std::fopen(path, "w");
    if (out == nullptr) {
        // twin rule untested: only an unwritable OPGEN_TWIN_TRACE path reaches it; the report always passes its own scratch file
        fail("trace", "cannot write the trace", std::string("OPGEN_TWIN_TRACE=") + path);
    }
    JsonWriter json;
    json.begin_object().key("cores").begin_array();
    for (const auto& [idx, events] : g_cores) {
        json.begin_object().key("core").integer(idx).key("events").begin_array();
        for (const Event& e : events) {
            write_event(json, e);
            // A launch may trace millions of events: stream them.
            if (json.str().size() > (1u << 20)) json.flush(out);
        }
        json.end_array().end_object();
    }
    json.end_array().end_object();
    json.flush(out);
    std::fputc('\n', out);
    std::fclose(out);
    g_cores.clear();
    g_cur = nullptr;
    g_instr = -1;
}

}  // namespace trace
}  // namespace opgen_twin
