// The running core's UB: the bump arena shared by queues and TBufs, TPipe/TQue/TBuf with the
// buffer states, and the checks of UB operands.
#include "opgen_twin/runtime_state.h"
#include "opgen_twin/kernel/perturb.h"

namespace opgen_twin {
namespace rt {

// DataCopyPad's garbage (runtime.h set_pad_seed): the seed and the fills made since it was set.
uint64_t g_pad_seed = 0;
uint64_t g_pad_fills = 0;

const char* position_name(uint8_t pos) {
    switch (AscendC::TPosition(pos)) {
        case AscendC::TPosition::VECIN: return "VECIN";
        case AscendC::TPosition::VECOUT: return "VECOUT";
        case AscendC::TPosition::VECCALC: return "VECCALC";
        default: return "non-UB position";
    }
}

int position_slot(uint8_t pos) {
    switch (AscendC::TPosition(pos)) {
        case AscendC::TPosition::VECIN: return 0;
        case AscendC::TPosition::VECOUT: return 1;
        case AscendC::TPosition::VECCALC: return 2;
        default: return -1;
    }
}

std::string que_name(const QueRec& q) {
    return std::string(position_name(q.pos)) + " queue #" + str(q.ordinal);
}

std::string que_desc(const QueRec& q) {
    return que_name(q) + " (depth " + str(uint64_t(q.depth)) + ", " + count_of(uint64_t(q.num), "buffer") + ")";
}

std::string buf_name(const BufRec& b) {
    if (b.queue < 0) return std::string(position_name(b.pos)) + " TBuf #" + str(b.ordinal);
    const QueRec& q = g_core->ques[size_t(b.queue)];
    return que_name(q) + " buffer " + str(b.index) + "/" + str(uint64_t(q.num));
}

void poison(uint32_t off, uint64_t bytes) { std::memset(g_core->ub.data() + off, kPoison, bytes); }

void note_high_water() {
    if (g_core->counters != nullptr) g_core->counters->ub_high = std::max(g_core->counters->ub_high, g_core->top);
}

QueRec& que_of(const kern::Handle& h, const char* api) {
    Core& c = core(api);
    if (h.epoch != c.epoch || h.rec < 0 || size_t(h.rec) >= c.ques.size()) {
        fail(api, "queue used before InitBuffer", "this TQue has no buffers in the current TPipe");
    }
    return c.ques[size_t(h.rec)];
}

BufRec& tbuf_of(const kern::Handle& h, const char* api) {
    Core& c = core(api);
    if (h.epoch != c.epoch || h.rec < 0 || size_t(h.rec) >= c.bufs.size()) {
        fail(api, "TBuf used before InitBuffer", "this TBuf has no buffer in the current TPipe");
    }
    return c.bufs[size_t(h.rec)];
}

bool in_queue(const QueRec& q, int32_t buf) { return buf >= q.first && buf < q.first + q.num; }

const char* state_name(BufState s) {
    switch (s) {
        case BufState::Free: return "free";
        case BufState::Allocated: return "allocated";
        case BufState::Enqueued: return "in the queue";
        case BufState::Dequeued: return "dequeued";
        case BufState::Fixed: return "a TBuf";
        case BufState::Released: return "released";
    }
    return "?";
}

// Fails unless the view's buffer may be read or written now.
BufRec& live_buffer(const char* api, const char* role, const kern::TensorRef& t) {
    Core& c = core(api);
    if (t.buf < 0 || size_t(t.buf) >= c.bufs.size()) {
        fail(api, "operand is not a UB tensor",
             std::string(role) + ": a LocalTensor that no AllocTensor, DeQue or TBuf::Get produced");
    }
    BufRec& b = c.bufs[size_t(t.buf)];
    const auto who = [&] { return std::string(role) + " " + kern::tensor_desc(t); };
    if (b.state == BufState::Released) fail(api, "use of a buffer released by TPipe::Reset", who());
    if (b.queue >= 0 && (b.state == BufState::Free || t.gen != b.gen)) {
        fail(api, "use of a tensor after FreeTensor",
             who() + ": its buffer was freed (the NPU may already be refilling it for the next tile)");
    }
    if (b.state == BufState::Enqueued) {
        fail(api, "use of a tensor between EnQue and DeQue",
             who() + ": an EnQue'd tensor belongs to the consumer pipe until DeQue");
    }
    return b;
}

void audit_leaks(const char* api) {
    for (const BufRec& b : g_core->bufs) {
        if (b.queue < 0) continue;
        if (b.state == BufState::Allocated || b.state == BufState::Dequeued || b.state == BufState::Enqueued) {
            fail(api, "tensor not freed at kernel end",
                 buf_name(b) + " is still " + state_name(b.state) +
                     " (every AllocTensor needs a FreeTensor; a leak hangs the next AllocTensor on the NPU)");
        }
    }
}

void release_all() {
    for (BufRec& b : g_core->bufs) b.state = BufState::Released;
    g_core->epoch = ++g_epochs;
    g_core->top = 0;
    g_core->per_pos[0] = g_core->per_pos[1] = g_core->per_pos[2] = 0;
    g_core->total = 0;
    // The TPipe's end waits for the flags its queues still hold (FreeTensor's of buffers never
    // allocated again) and empties the id pool.
    for (int e = 0; e < kEventTypes; ++e) {
        for (int id = 0; id < kEventIds; ++id) {
            if (g_core->holder[e][id] == IdHolder::Queue) g_core->flags[e][id] = false;
        }
    }
    std::memset(g_core->holder, 0, sizeof g_core->holder);
}

// Bump allocation shared by queues and TBufs; count and capacity are the A2 limits.
uint32_t ub_reserve(const char* api, const std::string& what, uint8_t pos, uint32_t num, uint32_t len, bool queue) {
    Core& c = core(api);
    const int slot = position_slot(pos);
    if (slot < 0) {
        fail(api, "position not modelled", what + ": only the UB positions VECIN, VECOUT and VECCALC exist on the twin");
    }
    if (num == 0 || len == 0) fail(api, "empty buffer", what + ": num " + str(num) + ", len " + str(len));
    if (queue && c.per_pos[slot] + int(num) > kMaxPerPosition) {
        fail(api, "more than 8 buffers in one queue position",
             what + " adds " + count_of(num, "buffer") + " to " + str(uint64_t(c.per_pos[slot])) + " already at " +
                 position_name(pos) + " (A2 has 8 event ids per position; AllocTensor/FreeTensor would hang)");
    }
    if (c.total + int(num) > kMaxBuffers) {
        fail(api, "more than 64 buffers in total",
             what + " adds " + count_of(num, "buffer") + " to " + str(uint64_t(c.total)) + " already allocated");
    }
    const uint64_t bytes = round_up(len, 32);
    const uint64_t end = c.top + bytes * num;
    if (end > g_soc.ub_bytes) {
        fail(api, "UB capacity exceeded",
             what + ": " + str(num) + " x " + str(bytes) + " B at UB " + hex(c.top) + " would end at " + str(end) +
                 " B, past the " + str(g_soc.ub_bytes) + " B UB of " + g_soc.name);
    }
    if (queue) c.per_pos[slot] += int(num);
    c.total += int(num);
    const uint32_t start = uint32_t(c.top);
    poison(start, bytes * num);
    c.top = end;
    note_high_water();
    return start;
}

}  // namespace rt

using namespace rt;

void set_pad_seed(uint64_t seed) {
    g_pad_seed = seed;
    g_pad_fills = 0;
}

namespace kern {

// ---------------------------------------------------------------- TPipe / TQue / TBuf

void pipe_open(const void* pipe) {
    Core& c = core("TPipe");
    if (c.pipe != nullptr) fail("TPipe", "second TPipe while one is alive", "A2 kernels have one TPipe per core");
    // A pipe that ended before this one must have returned its tensors; then UB starts afresh.
    audit_leaks("TPipe");
    release_all();
    c.pipe = pipe;
    // CANN 8.1 TPipe::TPipe() calls InitSocState(), which starts with set_atomic_none()
    // and on AIV sets every vector mask lane in normal mode (impl/kernel_tpipe_impl.h).
    c.atomic_add = false;
    mask_set("TPipe", ~uint64_t(0), ~uint64_t(0), false);
}

void pipe_close(const void* pipe) {
    if (g_core->active && g_core->pipe == pipe) g_core->pipe = nullptr;
}

void* pipe_current() {
    Core& c = core("GetTPipePtr");
    if (c.pipe == nullptr) fail("GetTPipePtr", "no TPipe", "no TPipe is alive on this core");
    return const_cast<void*>(c.pipe);
}

void pipe_reset(const void*) {
    core("TPipe::Reset");
    audit_leaks("TPipe::Reset");
    release_all();
    g_core->atomic_add = false;  // TPipe::Reset() calls InitSocState() too
    mask_set("TPipe::Reset", ~uint64_t(0), ~uint64_t(0), false);
}

void que_init(Handle& que, uint8_t pos, int32_t depth, uint32_t num, uint32_t len, uint8_t enq_evt,
              uint8_t free_evt) {
    const char* api = "TPipe::InitBuffer";
    Core& c = core(api);
    QueRec q;
    q.pos = pos;
    q.enq_evt = enq_evt;
    q.free_evt = free_evt;
    q.depth = depth;
    q.num = int32_t(num);
    q.ordinal = c.next_que;
    const std::string what = que_desc(q);
    if (que.epoch == c.epoch && que.rec >= 0) fail(api, "queue initialised twice", what + " already has buffers");
    if (depth < 1) fail(api, "queue depth out of range", what + ": a TQue needs depth >= 1");
    const uint32_t start = ub_reserve(api, what, pos, num, len, true);
    const uint32_t bytes = uint32_t(round_up(len, 32));
    q.first = int32_t(c.bufs.size());
    for (uint32_t i = 0; i < num; ++i) {
        BufRec b;
        b.queue = int32_t(c.ques.size());
        b.pos = pos;
        b.index = i;
        b.ordinal = q.ordinal;
        b.ub_off = start + i * bytes;
        b.bytes = bytes;
        c.bufs.push_back(b);
    }
    ++c.next_que;
    que = Handle{int32_t(c.ques.size()), c.epoch};
    c.ques.push_back(std::move(q));
}

void tbuf_init(Handle& buf, uint8_t pos, uint32_t len) {
    const char* api = "TPipe::InitBuffer";
    Core& c = core(api);
    BufRec b;
    b.pos = pos;
    b.ordinal = c.next_tbuf;
    const std::string what = buf_name(b);
    if (buf.epoch == c.epoch && buf.rec >= 0) fail(api, "TBuf initialised twice", what + " already has a buffer");
    b.ub_off = ub_reserve(api, what, pos, 1, len, false);
    b.bytes = uint32_t(round_up(len, 32));
    b.state = BufState::Fixed;
    ++c.next_tbuf;
    buf = Handle{int32_t(c.bufs.size()), c.epoch};
    c.bufs.push_back(b);
}

TensorRef que_alloc(const Handle& que) {
    const char* api = "TQue::AllocTensor";
    QueRec& q = que_of(que, api);
    for (int32_t k = 0; k < q.num; ++k) {
        const int32_t i = (q.cursor + k) % q.num;
        BufRec& b = g_core->bufs[size_t(q.first + i)];
        if (b.state != BufState::Free) continue;
        q.cursor = (i + 1) % q.num;
        b.state = BufState::Allocated;
        ++b.gen;
        // CANN's AllocTensor waits for the buffer's FreeTensor event (freeBufEvt) if one was set.
        if (b.free_set) flag_pair(q.free_evt, b.free_snap);
        if (b.free_set) queue_flag_wait(q.free_evt, b.free_id);
        if (b.free_set) trace::flag(false, kEventNames[q.free_evt], trace::kQueueKey + q.first + i);
        b.free_set = false;
        poison(b.ub_off, b.bytes);
        return TensorRef{q.first + i, b.gen, b.ub_off, b.bytes};
    }
    fail(api, "AllocTensor with no free buffer",
         que_desc(q) + ": every buffer is allocated or in the queue (the NPU would wait forever for a FreeTensor)");
}

void que_enque(const Handle& que, const TensorRef& t, const Here& here) {
    const char* api = "TQue::EnQue";
    QueRec& q = que_of(que, api);
    if (!in_queue(q, t.buf)) {
        fail(api, "EnQue of a tensor not allocated from this queue",
             tensor_desc(t) + " was not produced by AllocTensor of " + que_desc(q));
    }
    BufRec& b = g_core->bufs[size_t(t.buf)];
    if (b.state != BufState::Allocated || b.gen != t.gen) {
        fail(api, "EnQue of a tensor not allocated from this queue",
             tensor_desc(t) + " is " + (b.gen != t.gen ? "a stale view of an earlier allocation" : state_name(b.state)) +
                 "; only a tensor between AllocTensor and EnQue can be EnQue'd");
    }
    if (int32_t(q.fifo.size()) >= q.depth) {
        fail(api, "EnQue beyond the queue depth",
             que_desc(q) + " already holds " + count_of(q.fifo.size(), "EnQue'd tensor") +
                 " (the NPU queue would overwrite one; DeQue first or raise the depth)");
    }
    b.enq_id = queue_flag_set(api, q.enq_evt, here);
    q.fifo.push_back(t.buf);
    b.state = BufState::Enqueued;
    b.enq_snap = flag_carries(q.enq_evt);
    trace::flag(true, kEventNames[q.enq_evt], trace::kQueueKey + t.buf);
    ++counters().handoffs;
}

TensorRef que_deque(const Handle& que) {
    const char* api = "TQue::DeQue";
    QueRec& q = que_of(que, api);
    if (q.fifo.empty()) {
        fail(api, "DeQue on an empty queue", que_desc(q) + " holds no EnQue'd tensor (the NPU would wait forever)");
    }
    const int32_t id = q.fifo.front();
    q.fifo.pop_front();
    BufRec& b = g_core->bufs[size_t(id)];
    b.state = BufState::Dequeued;
    flag_pair(q.enq_evt, b.enq_snap);
    queue_flag_wait(q.enq_evt, b.enq_id);
    trace::flag(false, kEventNames[q.enq_evt], trace::kQueueKey + id);
    ++counters().handoffs;
    return TensorRef{id, b.gen, b.ub_off, b.bytes};
}

void que_free(const Handle& que, const TensorRef& t, const Here& here) {
    const char* api = "TQue::FreeTensor";
    QueRec& q = que_of(que, api);
    if (!in_queue(q, t.buf)) {
        fail(api, "FreeTensor of a tensor not allocated from this queue",
             tensor_desc(t) + " does not belong to " + que_desc(q));
    }
    BufRec& b = g_core->bufs[size_t(t.buf)];
    if (b.state == BufState::Free || b.gen != t.gen) {
        fail(api, "double FreeTensor",
             tensor_desc(t) + ": this allocation was already freed" +
                 (b.state == BufState::Free ? "" : " and the buffer has been allocated again since"));
    }
    if (b.state == BufState::Enqueued) {
        fail(api, "FreeTensor of a tensor not allocated or dequeued",
             tensor_desc(t) + " is still in the queue; DeQue it before FreeTensor");
    }
    b.free_id = queue_flag_set(api, q.free_evt, here);
    b.state = BufState::Free;
    b.free_snap = flag_carries(q.free_evt);
    b.free_set = true;
    trace::flag(true, kEventNames[q.free_evt], trace::kQueueKey + t.buf);
}

int32_t que_count(const Handle& que) { return int32_t(que_of(que, "TQue::GetTensorCountInQue").fifo.size()); }

TensorRef tbuf_get(const Handle& buf, const char* api, uint64_t offset_bytes, uint64_t bytes) {
    BufRec& b = tbuf_of(buf, api);
    if (b.state == BufState::Released) fail(api, "use of a buffer released by TPipe::Reset", buf_name(b));
    if (offset_bytes % 32 != 0) {
        fail(api, "UB address not 32-byte aligned", buf_name(b) + ": bufOffset " + str(offset_bytes) + " B");
    }
    if (bytes == UINT64_MAX) bytes = offset_bytes <= b.bytes ? b.bytes - offset_bytes : 0;
    if (offset_bytes + bytes > b.bytes) {
        fail(api, "Get beyond the TBuf size",
             buf_name(b) + ": bytes [" + str(offset_bytes) + ", " + str(offset_bytes + bytes) + ") of " + str(b.bytes));
    }
    return TensorRef{int32_t(&b - g_core->bufs.data()), b.gen, uint32_t(b.ub_off + offset_bytes), uint32_t(bytes)};
}

// dav_c220: TOTAL_VEC_LOCAL_SIZE = TMP_UB_OFFSET = 184 KiB (CANN 8.1 impl/utils/
// kernel_utils_constants.h l.136-138); APIs that need scratch write it there, whatever the
// kernel's TPipe put there.
constexpr uint64_t kTmpUbOffset = 184 * 1024;

void pad_garbage(uint8_t* to, uint64_t bytes, uint32_t elem) {
    const uint64_t fill = ++g_pad_fills;
    for (uint64_t i = 0; i < bytes; i += elem) {
        const uint64_t h = perturb_mix(g_pad_seed ^ (fill << 24) ^ i);
        if (h % 4 == 0) {
            std::memset(to + i, 0xFF, elem);  // NaN in every float type (-1 in integers)
        } else {
            std::memcpy(to + i, &h, std::min<uint64_t>(elem, sizeof h));
        }
    }
}

void api_scratch(const char* api, uint64_t bytes) {
    Core& c = core(api);
    const uint64_t a = kTmpUbOffset, b = kTmpUbOffset + bytes;
    if (b > c.ub.size()) return;
    for (const BufRec& buf : c.bufs) {
        if (buf.state == BufState::Released) continue;
        if (buf.ub_off < b && a < uint64_t(buf.ub_off) + buf.bytes) {
            fail(api, "buffer overlaps the API scratch at TMP_UB_OFFSET",
                 buf_name(buf) + " [UB " + hex(buf.ub_off) + ", " + str(buf.bytes) + " B] covers UB [" + hex(a) + ", " +
                     hex(b) + "), which " + api + " overwrites on dav_c220 (TMP_UB_OFFSET = 184 KiB); keep the " +
                     "TPipe's buffers below 184 KiB in kernels that use it");
        }
    }
    track_ub(a, bytes, true);
    poison(uint32_t(a), bytes);
}

// ---------------------------------------------------------------- checks

uint8_t* ub_base() { return core("LocalTensor").ub.data(); }

std::string tensor_desc(const TensorRef& t) {
    if (!g_core->active || t.buf < 0 || size_t(t.buf) >= g_core->bufs.size()) return "an unbacked LocalTensor";
    const BufRec& b = g_core->bufs[size_t(t.buf)];
    std::string s = buf_name(b) + " [UB " + hex(b.ub_off) + ", " + str(b.bytes) + " B]";
    if (t.off != b.ub_off) s += " at +" + str(t.off - b.ub_off) + " B";
    return s;
}

uint8_t* ub_operand(const char* api, const char* role, const TensorRef& t, uint64_t bytes, bool aligned,
                    Extent extent, bool track) {
    const BufRec& b = live_buffer(api, role, t);
    if (aligned && t.off % 32 != 0) {
        fail(api, "UB address not 32-byte aligned",
             std::string(role) + " " + tensor_desc(t) + " starts at UB " + hex(t.off));
    }
    uint64_t limit = extent == Extent::BlockPadded ? round_up(t.bytes, 32) : t.bytes;
    limit = std::min<uint64_t>(limit, uint64_t(b.ub_off) + b.bytes - t.off);
    if (bytes > limit) {
        fail(api, "access outside the LocalTensor",
             std::string(role) + " " + tensor_desc(t) + ": the access covers " + str(bytes) + " B, the tensor " +
                 str(limit) + " B");
    }
    if (track && bytes > 0) track_ub(t.off, bytes, std::strncmp(role, "dst", 3) == 0);
    return g_core->ub.data() + t.off;
}

void check_overlap(const char* api, const char* role_a, const TensorRef& a, uint64_t bytes_a, const char* role_b,
                   const TensorRef& b, uint64_t bytes_b, bool identical_ok) {
    if (bytes_a == 0 || bytes_b == 0) return;
    const uint64_t a0 = a.off, a1 = a.off + bytes_a, b0 = b.off, b1 = b.off + bytes_b;
    if (a1 <= b0 || b1 <= a0) return;
    if (identical_ok && a0 == b0 && bytes_a == bytes_b) return;
    fail(api, "partial overlap of dst and src",
         std::string(role_a) + " UB [" + hex(a0) + ", " + hex(a1) + ") and " + role_b + " UB [" + hex(b0) + ", " +
             hex(b1) + ") overlap" + (identical_ok ? " without being the same range" : " (different element types)"));
}

void check_count(const char* api, int64_t count) {
    if (count < 0) fail(api, "negative count", "count " + std::to_string(count));
}

void fail_dtype(const char* api, const char* role, DType t) {
    fail(api, "dtype not supported on A2",
         std::string(role) + " = " + dtype_name(t) +
             (t == DType::BF16 ? " (A2 has no bfloat16_t arithmetic: Cast to float, compute, Cast back with CAST_RINT)"
                               : ""));
}

uint8_t* ub_element(const char* api, const TensorRef& t, uint64_t index, uint32_t elem_size, bool write) {
    live_buffer(api, "tensor", t);
    if ((index + 1) * elem_size > t.bytes) {
        fail(api, "index out of bounds",
             tensor_desc(t) + ": index " + str(index) + ", size " + str(t.bytes / elem_size) + " elements");
    }
    count_scalar_ub();
    track_ub(t.off + index * elem_size, elem_size, write);
    return g_core->ub.data() + t.off + index * elem_size;
}

void check_resize(const char* api, const TensorRef& t, uint64_t bytes) {
    const BufRec& b = live_buffer(api, "tensor", t);
    if (t.off + bytes > uint64_t(b.ub_off) + b.bytes) {
        fail(api, "SetSize beyond the buffer", tensor_desc(t) + ": " + str(bytes) + " B would pass the buffer's end");
    }
}

int32_t buffer_position(const TensorRef& t) {
    if (!g_core->active || t.buf < 0 || size_t(t.buf) >= g_core->bufs.size()) return -1;
    return g_core->bufs[size_t(t.buf)].pos;
}

}  // namespace kern
}  // namespace opgen_twin
