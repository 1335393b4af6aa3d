// Hand-written op_host file in the msOpGen style (a small RMS norm: y = x * rstd * gamma,
// rstd = 1 / sqrt(mean(x^2) + epsilon) per row), for the twin's host tests. It must compile
// both against the twin (-std=c++17) and against a real CANN 8.1 toolkit (-std=c++11), which
// shows that the twin's op_host API has the real names and types for everything used here.
#include <cstdio>

#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"
#include "twin_sample_norm_tiling.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    const gert::Shape& xShape = context->GetInputShape(0)->GetStorageShape();
    const size_t rank = xShape.GetDimNum();
    if (rank == 0) {
        std::fprintf(stderr, "TwinSampleNorm: x needs at least one dim\n");
        return ge::GRAPH_FAILED;
    }
    const uint64_t cols = static_cast<uint64_t>(xShape.GetDim(rank - 1));
    uint64_t rows = 1;
    for (size_t i = 0; i + 1 < rank; ++i) {
        rows *= static_cast<uint64_t>(xShape.GetDim(i));
    }
    const ge::DataType dtype = context->GetInputDesc(0)->GetDataType();
    const float* epsilon = context->GetAttrs()->GetAttrPointer<float>(0);

    platform_ascendc::PlatformAscendC platform(context->GetPlatformInfo());
    const uint32_t cores = platform.GetCoreNumAiv();
    uint64_t ubBytes = 0;
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ubBytes);
    // One row of x, gamma and y in fp32 must fit the UB at once.
    if (cols * 3 * sizeof(float) > ubBytes) {
        std::fprintf(stderr, "TwinSampleNorm: a row of %llu elements does not fit %llu UB bytes\n",
                     static_cast<unsigned long long>(cols),
                     static_cast<unsigned long long>(ubBytes));
        return ge::GRAPH_FAILED;
    }
    const uint64_t rowsPerCore = (rows + cores - 1) / cores;
    const uint32_t blockDim =
        rowsPerCore == 0 ? 0 : static_cast<uint32_t>((rows + rowsPerCore - 1) / rowsPerCore);
    context->SetBlockDim(blockDim);
    context->SetTilingKey(dtype == ge::DT_FLOAT ? 1 : 2);

    TwinSampleNormTilingData tiling;
    tiling.set_rowNum(static_cast<uint32_t>(rows));
    tiling.set_colNum(static_cast<uint32_t>(cols));
    tiling.set_rowsPerCore(static_cast<uint32_t>(rowsPerCore));
    tiling.set_epsilon(*epsilon);
    tiling.set_totalLength(rows * cols);
    tiling.set_isFloat32(dtype == ge::DT_FLOAT ? 1 : 0);
    uint16_t coreSplit[3] = {static_cast<uint16_t>(blockDim), static_cast<uint16_t>(rowsPerCore),
                             static_cast<uint16_t>(blockDim == 0 ? 0
                                                   : rows - rowsPerCore * (blockDim - 1))};
    tiling.set_coreSplit(coreSplit);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(),
                        context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());

    size_t* workspace = context->GetWorkspaceSizes(1);
    workspace[0] = 4096;
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
static graphStatus InferShape(gert::InferShapeContext* context)
{
    const gert::Shape* xShape = context->GetInputShape(0);
    *context->GetOutputShape(0) = *xShape;
    gert::Shape* rstdShape = context->GetOutputShape(1);
    const size_t rank = xShape->GetDimNum();
    rstdShape->SetDimNum(rank);
    for (size_t i = 0; i < rank; ++i) {
        rstdShape->SetDim(i, i + 1 == rank ? 1 : xShape->GetDim(i));
    }
    return GRAPH_SUCCESS;
}

static graphStatus InferDataType(gert::InferDataTypeContext* context)
{
    context->SetOutputDataType(0, context->GetInputDataType(0));
    context->SetOutputDataType(1, ge::DT_FLOAT);
    return GRAPH_SUCCESS;
}
}  // namespace ge

namespace ops {
class TwinSampleNorm : public OpDef {
public:
    explicit TwinSampleNorm(const char* name) : OpDef(name)
    {
        this->Input("x")
            .ParamType(REQUIRED)
            .DataType({ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT})
            .Format({ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND})
            .UnknownShapeFormat({ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND})
            .AutoContiguous();
        this->Input("gamma")
            .ParamType(REQUIRED)
            .DataType({ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT})
            .Format({ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND})
            .UnknownShapeFormat({ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND});
        this->Output("y")
            .ParamType(REQUIRED)
            .DataType({ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT})
            .Format({ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND})
            .UnknownShapeFormat({ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND});
        this->Output("rstd")
            .ParamType(REQUIRED)
            .DataType({ge::DT_FLOAT, ge::DT_FLOAT, ge::DT_FLOAT})
            .Format({ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND})
            .UnknownShapeFormat({ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND});
        this->Attr("epsilon").AttrType(OPTIONAL).Float(1e-6);

        this->SetInferShape(ge::InferShape).SetInferDataType(ge::InferDataType);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
        this->AICore().AddConfig("ascend910_93");
    }
};

OP_ADD(TwinSampleNorm);
}  // namespace ops
