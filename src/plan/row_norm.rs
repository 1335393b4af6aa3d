//! The row_norm family's tiling-data layout. The generated op_host TilingFunc fills it, the
//! generated kernel reads it, and `opgen plan` names the fields: one list feeds all three.

use super::TilingField;

pub const TILING_FIELDS: &[TilingField] = &[
    TilingField::u32("mode", "0 whole row per UB pass, 1 several rows per pass, 2 split-D two-pass"),
    TilingField::u32("numRow", "rows: product of x's leading dims"),
    TilingField::u32("numCol", "elements per row: product of gamma's dims"),
    TilingField::u32("numColAlign", "numCol rounded up to 32 bytes of x's dtype"),
    TilingField::u32("blockFactor", "rows per core (the last core may get fewer)"),
    TilingField::u32("rowFactor", "rows per UB pass in modes 0 and 1"),
    TilingField::u32("colFactor", "elements per chunk in mode 2"),
    TilingField::u32("gammaResident", "mode 2: 1 when gamma stays in UB for every row"),
    TilingField::f32("epsilon", "added to mean(x^2) before the square root"),
    TilingField::f32("avgFactor", "1/numCol in float32"),
];
