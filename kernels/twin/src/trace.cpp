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

void json_str(FILE* out, const char* s) {
    std::fputc('"', out);
    for (const char* p = s; *p != '\0'; ++p) {
        if (*p == '"' || *p == '\\') std::fputc('\\', out);
        std::fputc(*p, out);
    }
    std::fputc('"', out);
}

const char* pipe_label(int p) {
    static const char* const names[] = {"S", "V", "MTE2", "MTE3", "MTE1", "M", "FIX"};
    return p >= 0 && p < 7 ? names[p] : "?";
}

void write_event(FILE* out, const Event& e) {
    switch (e.kind) {
        case Kind::Instr:
            if (e.pipe == 1) {
                std::fputs("{\"op\":\"vec\",\"api\":", out);
                json_str(out, e.name);
                std::fprintf(out, ",\"elements\":%" PRIu64 "}", e.amount);
            } else if (e.pipe == 2 || e.pipe == 3) {
                std::fprintf(out, "{\"op\":\"dma\",\"pipe\":\"%s\",\"api\":", pipe_label(e.pipe));
                json_str(out, e.name);
                std::fputs(",\"gm\":", out);
                json_str(out, e.gm != nullptr ? e.gm : "");
                std::fprintf(out, ",\"bytes\":%" PRIu64 ",\"blocks\":%" PRIu64 ",\"block_bytes\":%" PRIu64
                                  ",\"gm_offset\":%" PRIu64 "}",
                             e.amount, e.blocks, e.block_bytes, e.gm_offset);
            } else {
                std::fputs("{\"op\":\"scalar\",\"api\":", out);
                json_str(out, e.name);
                std::fprintf(out, ",\"gm_accesses\":%u,\"ub_accesses\":%u}", e.gm_acc, e.ub_acc);
            }
            break;
        case Kind::Set:
        case Kind::Wait:
            std::fprintf(out, "{\"op\":\"%s\",\"event\":\"%s\",\"key\":%" PRId64 "}",
                         e.kind == Kind::Set ? "set" : "wait", e.name, e.key);
            break;
        case Kind::Hidden: std::fprintf(out, "{\"op\":\"hidden\",\"event\":\"%s\"}", e.name); break;
        case Kind::Barrier: std::fprintf(out, "{\"op\":\"barrier\",\"pipe\":\"%s\"}", e.name); break;
    }
}

}  // namespace

void core_begin(int64_t idx) {
    if (!g_on) return;
    g_cur = &g_cores[idx];
    g_cur->clear();
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
    std::fputs("{\"cores\":[", out);
    bool first_core = true;
    for (const auto& [idx, events] : g_cores) {
        std::fprintf(out, "%s\n{\"core\":%" PRId64 ",\"events\":[", first_core ? "" : ",", idx);
        first_core = false;
        bool first = true;
        for (const Event& e : events) {
            if (!first) std::fputc(',', out);
            first = false;
            write_event(out, e);
        }
        std::fputs("]}", out);
    }
    std::fputs("\n]}\n", out);
    std::fclose(out);
    g_cores.clear();
    g_cur = nullptr;
    g_instr = -1;
}

}  // namespace trace
}  // namespace opgen_twin
