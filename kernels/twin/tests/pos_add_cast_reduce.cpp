// expect: ok
// Positive test: two cores run kernels/add_cast_reduce.h on 100 unaligned halves each. The half
// sums are checked bit-exactly against the compiler's _Float16 (an independent RNE oracle), the
// float totals against the documented ReduceSum order, and the counters against the transfers.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "kernels/add_cast_reduce.h"
#include "twin_test.h"

namespace {

constexpr uint32_t kPerCore = 100;
constexpr int kCores = 2;

uint16_t f16_bits(double v) {
    const _Float16 h = static_cast<_Float16>(v);
    uint16_t bits;
    std::memcpy(&bits, &h, sizeof bits);
    return bits;
}

double f16_value(uint16_t bits) {
    _Float16 h;
    std::memcpy(&h, &bits, sizeof h);
    return static_cast<double>(h);
}

// ReduceSum's documented order: a pairwise tree inside each 64-float repeat, repeats in sequence.
float reference_sum(const float* v, uint32_t n) {
    float total = 0.0f;
    for (uint32_t first = 0; first < n; first += 64) {
        float lanes[64];
        uint32_t m = n - first < 64 ? n - first : 64;
        for (uint32_t i = 0; i < m; ++i) lanes[i] = v[first + i];
        while (m > 1) {
            const uint32_t pairs = m / 2;
            for (uint32_t i = 0; i < pairs; ++i) lanes[i] = lanes[2 * i] + lanes[2 * i + 1];
            if (m % 2 != 0) lanes[pairs] = lanes[m - 1];
            m = pairs + m % 2;
        }
        total = first == 0 ? lanes[0] : total + lanes[0];
    }
    return total;
}

bool contains(const std::string& text, const std::string& part) {
    if (text.find(part) != std::string::npos) return true;
    std::fprintf(stderr, "counters lack %s:\n%s\n", part.c_str(), text.c_str());
    return false;
}

}  // namespace

int main() {
    const uint32_t n = kPerCore * kCores;
    uint8_t* x = opgen_twin::gm_alloc("x", n * 2);
    uint8_t* y = opgen_twin::gm_alloc("y", n * 2);
    uint8_t* z = opgen_twin::gm_alloc("z", n * 2);
    uint8_t* sum = opgen_twin::gm_alloc("sum", kCores * 4);
    for (uint32_t i = 0; i < n; ++i) {
        const uint16_t a = f16_bits(std::sin(0.37 * i) * 5.0);
        const uint16_t b = f16_bits(std::cos(1.91 * i) * 3.0 + 0.001 * i);
        std::memcpy(x + 2 * i, &a, 2);
        std::memcpy(y + 2 * i, &b, 2);
    }
    opgen_twin::reset_counters();
    twin_test::launch(kCores, [&] { add_cast_reduce(x, y, z, sum, kPerCore); });

    int bad = 0;
    float widened[kPerCore];
    for (int core = 0; core < kCores; ++core) {
        for (uint32_t j = 0; j < kPerCore; ++j) {
            const uint32_t i = core * kPerCore + j;
            uint16_t a, b, got;
            std::memcpy(&a, x + 2 * i, 2);
            std::memcpy(&b, y + 2 * i, 2);
            std::memcpy(&got, z + 2 * i, 2);
            const uint16_t want = f16_bits(f16_value(a) + f16_value(b));
            if (got != want && bad++ < 5) std::fprintf(stderr, "z[%u] = %04x, want %04x\n", i, got, want);
            widened[j] = static_cast<float>(f16_value(want));
        }
        float got_sum;
        std::memcpy(&got_sum, sum + 4 * core, 4);
        const float want_sum = reference_sum(widened, kPerCore);
        if (std::memcmp(&got_sum, &want_sum, 4) != 0) {
            std::fprintf(stderr, "sum[%d] = %.9g, want %.9g\n", core, double(got_sum), double(want_sum));
            ++bad;
        }
    }

    char* text = nullptr;
    size_t size = 0;
    FILE* out = open_memstream(&text, &size);
    opgen_twin::write_counters_json(out);
    std::fclose(out);
    const std::string json(text, size);
    std::free(text);
    const bool counters_ok =
        contains(json, "{\"cores\":[{\"core\":0,") && contains(json, "\"gm_read_bytes\":{\"x\":200,\"y\":200}") &&
        contains(json, "\"gm_write_bytes\":{\"sum\":4,\"z\":200}") && contains(json, "\"transfers_in\":2,") &&
        contains(json, "\"transfer_in_bytes\":400,") && contains(json, "\"transfers_out\":2,") &&
        contains(json, "\"vector_instructions\":{\"Add\":1,\"Cast\":1,\"ReduceSum\":1}") &&
        contains(json, "\"queue_handoffs\":6,") && contains(json, "\"barriers\":2,") &&
        contains(json, "\"copy_in_total\":2,") && contains(json, "{\"core\":1,");
    return bad == 0 && counters_ok ? 0 : 1;
}
