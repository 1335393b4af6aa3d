// Extra op definitions for host_registry_test: one with every attribute kind, one whose
// InferDataType picks an unregistered dtype, one full of registration mistakes, and one
// (TwinRuleOp) whose host functions make the mistake its `mistake` attr names, one per planner
// rule, so each rule has a negative test.
// (The well-formed sample op lives in host_sample/op_host/, shared with the runner build.)
#include <cstdio>
#include <cstring>

#include "register/op_def_registry.h"
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(TwinAttrOpTilingData)
TILING_DATA_FIELD_DEF(uint8_t, flag);
TILING_DATA_FIELD_DEF(int64_t, count);
TILING_DATA_FIELD_DEF(float, scale);
TILING_DATA_FIELD_DEF(bool, modeIsHalf);
TILING_DATA_FIELD_DEF(int32_t, minusOne);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(TwinAttrOp, TwinAttrOpTilingData)

static ge::graphStatus TwinAttrOpTiling(gert::TilingContext* context)
{
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    TwinAttrOpTilingData tiling;
    tiling.set_count(*attrs->GetInt(0));
    tiling.set_modeIsHalf(std::strcmp(attrs->GetStr(1), "half") == 0);
    tiling.set_flag(*attrs->GetBool(2) ? 1 : 0);
    tiling.set_scale(*attrs->GetFloat(3));
    tiling.set_minusOne(-1);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(),
                        context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    context->SetBlockDim(1);
    return ge::GRAPH_SUCCESS;
}

static ge::graphStatus TwinBadDtypeOpTiling(gert::TilingContext* context)
{
    context->GetRawTilingData()->SetDataSize(8);
    context->SetBlockDim(1);
    return ge::GRAPH_SUCCESS;
}
BEGIN_TILING_DATA_DEF(TwinRuleOpTilingData)
TILING_DATA_FIELD_DEF(uint32_t, n);
TILING_DATA_FIELD_DEF(uint32_t, m);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(TwinRuleOp, TwinRuleOpTilingData)

// mistake 4: no SetDataSize; 5: a size other than the registered class's 8 bytes.
static ge::graphStatus TwinRuleOpTiling(gert::TilingContext* context)
{
    const int64_t mistake = *context->GetAttrs()->GetInt(0);
    if (mistake != 4) {
        context->GetRawTilingData()->SetDataSize(mistake == 5 ? 16 : 8);
    }
    context->SetBlockDim(1);
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
// mistake 1: a negative output dim; 3: dims whose product overflows int64.
static graphStatus TwinRuleOpShape(gert::InferShapeContext* context)
{
    const int64_t mistake = *context->GetAttrs()->GetInt(0);
    gert::Shape* y = context->GetOutputShape(0);
    *y = *context->GetInputShape(0);
    if (mistake == 1) {
        y->SetDim(0, -1);
    } else if (mistake == 3) {
        y->SetDimNum(0);
        for (int i = 0; i < 4; ++i) {
            y->AppendDim(int64_t(1) << 20);
        }
    }
    return GRAPH_SUCCESS;
}

// mistake 2: the output dtype left unset.
static graphStatus TwinRuleOpDataType(gert::InferDataTypeContext* context)
{
    if (*context->GetAttrs()->GetInt(0) != 2) {
        context->SetOutputDataType(0, context->GetInputDataType(0));
    }
    return GRAPH_SUCCESS;
}

static graphStatus TwinCopyShape(gert::InferShapeContext* context)
{
    *context->GetOutputShape(0) = *context->GetInputShape(0);
    return GRAPH_SUCCESS;
}

static graphStatus TwinCopyDataType(gert::InferDataTypeContext* context)
{
    context->SetOutputDataType(0, context->GetInputDataType(0));
    return GRAPH_SUCCESS;
}

static graphStatus TwinInt32DataType(gert::InferDataTypeContext* context)
{
    context->SetOutputDataType(0, ge::DT_INT32);
    return GRAPH_SUCCESS;
}
}  // namespace ge

namespace ops {
class TwinAttrOp : public OpDef {
public:
    explicit TwinAttrOp(const char* name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_INT32});
        this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_INT32});
        this->Attr("count").AttrType(REQUIRED).Int();
        this->Attr("mode").AttrType(OPTIONAL).String("half");
        this->Attr("flag").AttrType(OPTIONAL).Bool(false);
        this->Attr("scale").Float(2.0f);
        this->SetInferShape(ge::TwinCopyShape).SetInferDataType(ge::TwinCopyDataType);
        this->AICore().SetTiling(optiling::TwinAttrOpTiling);
        this->AICore().AddConfig("ascend910b");
        this->AICore().AddConfig("ascend910b");
    }
};
OP_ADD(TwinAttrOp);

class TwinBadDtypeOp : public OpDef {
public:
    explicit TwinBadDtypeOp(const char* name) : OpDef(name)
    {
        this->Input("x").DataType({ge::DT_FLOAT});
        this->Output("y").DataType({ge::DT_FLOAT});
        this->SetInferShape(ge::TwinCopyShape).SetInferDataType(ge::TwinInt32DataType);
        this->AICore().SetTiling(optiling::TwinBadDtypeOpTiling).AddConfig("ascend910b");
    }
};
OP_ADD(TwinBadDtypeOp);

class TwinBrokenOp : public OpDef {
public:
    explicit TwinBrokenOp(const char* name) : OpDef(name)
    {
        this->Input("x").DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
        this->Output("y").DataType({ge::DT_FLOAT});
        this->Output("x").DataType({ge::DT_FLOAT16, ge::DT_FLOAT});  // a ref output of input x, other dtypes
        this->Attr("y").Float();
        this->Attr("alpha").AttrType(OPTIONAL).Float();
        this->Attr("beta");
        this->Attr("gamma").Int(1).Float(2.0f);
        this->AICore().AddConfig("ascend910c");
    }
};
OP_ADD(TwinBrokenOp);

class TwinRuleOp : public OpDef {
public:
    explicit TwinRuleOp(const char* name) : OpDef(name)
    {
        this->Input("x").DataType({ge::DT_FLOAT});
        this->Output("y").DataType({ge::DT_FLOAT});
        this->Attr("mistake").AttrType(REQUIRED).Int();
        this->SetInferShape(ge::TwinRuleOpShape).SetInferDataType(ge::TwinRuleOpDataType);
        this->AICore().SetTiling(optiling::TwinRuleOpTiling).AddConfig("ascend910b");
    }
};
OP_ADD(TwinRuleOp);
}  // namespace ops
