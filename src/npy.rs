//! `.npy` files (NumPy format 1.0 written; 1.0, 2.0 and 3.0 read), C order only.
//!
//! Format (numpy `lib/format.py`, "NPY format"): the magic `\x93NUMPY`, one byte major and one
//! byte minor version, the header length (u16 LE for 1.0, u32 LE for 2.0/3.0), then the header:
//! a Python dict literal with the keys `descr`, `fortran_order` and `shape`, padded with spaces
//! and ended by `\n` so that magic + version + length + header is a multiple of 64 bytes. The
//! raw element data follows.
//!
//! Supported `descr`: `<f2`, `<f4`, `|i1`, `<i4`, `<i8`, and bfloat16 (numpy has none) in the
//! two spellings users have ([`Bf16Npy`]): `<V2`, what `np.save` writes for an
//! `ml_dtypes.bfloat16` array (ml_dtypes 0.7.0 registers bfloat16 as a 2-byte type of kind `V`
//! with little-endian byte order; `np.load` gives it back as `V2`, to `.view(ml_dtypes.bfloat16)`),
//! and `<u2`, the bit pattern as uint16. A file is never converted to another dtype: when the
//! caller expects a dtype and the file holds another, that is an error naming both.

use crate::dtype::DType;
use crate::tensor::{format_shape, HostTensor};
use std::fmt;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// How a bfloat16 array is spelt in a `.npy` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bf16Npy {
    /// `<V2`: an `ml_dtypes.bfloat16` array saved by numpy (what jax, tensorflow and numpy
    /// users have).
    MlDtypes,
    /// `<u2`: the bit pattern as uint16 (`tensor.view(torch.int16)`-style exports).
    U2,
}

impl Bf16Npy {
    pub const ALL: [Bf16Npy; 2] = [Bf16Npy::MlDtypes, Bf16Npy::U2];

    pub fn descr(self) -> &'static str {
        match self {
            Bf16Npy::MlDtypes => "<V2",
            Bf16Npy::U2 => "<u2",
        }
    }

    /// The command-line spelling (`--bf16-npy`).
    pub fn name(self) -> &'static str {
        match self {
            Bf16Npy::MlDtypes => "ml_dtypes",
            Bf16Npy::U2 => "u2",
        }
    }

    pub fn parse(text: &str) -> Option<Bf16Npy> {
        Bf16Npy::ALL.into_iter().find(|b| b.name() == text)
    }
}

/// A `.npy` file read: the tensor, and for bfloat16 the spelling the file used.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyFile {
    pub tensor: HostTensor,
    pub bf16: Option<Bf16Npy>,
}

/// What went wrong with which file.
#[derive(Debug)]
pub enum NpyError {
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file does not start with `\x93NUMPY`.
    BadMagic {
        path: PathBuf,
    },
    UnsupportedVersion {
        path: PathBuf,
        major: u8,
        minor: u8,
    },
    /// The file ends before the header or the data it announces.
    Truncated {
        path: PathBuf,
        what: String,
    },
    /// The header dict cannot be parsed or lacks a key.
    BadHeader {
        path: PathBuf,
        reason: String,
    },
    UnsupportedDescr {
        path: PathBuf,
        descr: String,
    },
    FortranOrder {
        path: PathBuf,
    },
    /// The file's dtype is not the one the caller expects.
    DtypeMismatch {
        path: PathBuf,
        expected: DType,
        descr: String,
    },
    /// The data length does not match shape × item size.
    SizeMismatch {
        path: PathBuf,
        descr: String,
        shape: Vec<usize>,
        expected_bytes: usize,
        actual_bytes: usize,
    },
}

impl fmt::Display for NpyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NpyError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            NpyError::BadMagic { path } => write!(
                f,
                "{}: not a .npy file (bad magic: the file must start with \\x93NUMPY)",
                path.display()
            ),
            NpyError::UnsupportedVersion { path, major, minor } => write!(
                f,
                "{}: unsupported .npy format version {major}.{minor} (1.0, 2.0 and 3.0 are read)",
                path.display()
            ),
            NpyError::Truncated { path, what } => {
                write!(f, "{}: file is truncated: {what}", path.display())
            }
            NpyError::BadHeader { path, reason } => {
                write!(f, "{}: malformed .npy header: {reason}", path.display())
            }
            NpyError::UnsupportedDescr { path, descr } => write!(
                f,
                "{}: unsupported dtype descr '{descr}' (supported: '<f2' float16, '<V2' bfloat16 \
                 (ml_dtypes), '<u2' bfloat16 bits, '<f4' float32, '|i1' int8, '<i4' int32, \
                 '<i8' int64)",
                path.display()
            ),
            NpyError::FortranOrder { path } => write!(
                f,
                "{}: fortran_order is True; only C-order arrays are supported \
                 (save with np.ascontiguousarray)",
                path.display()
            ),
            NpyError::DtypeMismatch { path, expected, descr } => write!(
                f,
                "{}: expected {expected} (descr {}), but the file holds descr '{descr}'; \
                 convert the array before saving, it is never converted silently",
                path.display(),
                match expected {
                    DType::BFloat16 => "'<V2' (ml_dtypes) or '<u2' (bits)".to_string(),
                    other => format!("'{}'", other.npy_descr()),
                }
            ),
            NpyError::SizeMismatch { path, descr, shape, expected_bytes, actual_bytes } => write!(
                f,
                "{}: shape {} of '{descr}' needs {expected_bytes} data bytes, the file has \
                 {actual_bytes}",
                path.display(),
                format_shape(shape)
            ),
        }
    }
}

impl std::error::Error for NpyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NpyError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Reads a `.npy` file. With `expected = Some(d)` the file must hold exactly `d` (`<V2` and
/// `<u2` are read as bfloat16); with `None` the dtype comes from the file.
pub fn read_npy(path: &Path, expected: Option<DType>) -> Result<HostTensor, NpyError> {
    read_npy_file(path, expected).map(|f| f.tensor)
}

/// [`read_npy`], also telling which bfloat16 spelling the file used.
pub fn read_npy_file(path: &Path, expected: Option<DType>) -> Result<NpyFile, NpyError> {
    let bytes = std::fs::read(path).map_err(|source| NpyError::Io { path: path.to_path_buf(), source })?;
    decode_npy_file(&bytes, path, expected)
}

/// Writes `tensor` as a format 1.0 `.npy` file (2.0 if the header would not fit in 64 KiB),
/// bfloat16 as `<u2` bits.
pub fn write_npy(path: &Path, tensor: &HostTensor) -> Result<(), NpyError> {
    write_npy_as(path, tensor, Bf16Npy::U2)
}

/// [`write_npy`] with bfloat16 spelt as `bf16`.
pub fn write_npy_as(path: &Path, tensor: &HostTensor, bf16: Bf16Npy) -> Result<(), NpyError> {
    std::fs::write(path, encode_npy_as(tensor, bf16))
        .map_err(|source| NpyError::Io { path: path.to_path_buf(), source })
}

/// The complete `.npy` file contents for `tensor` (bfloat16 as `<u2`).
pub fn encode_npy(tensor: &HostTensor) -> Vec<u8> {
    encode_npy_as(tensor, Bf16Npy::U2)
}

/// [`encode_npy`] with bfloat16 spelt as `bf16` (other dtypes are unaffected).
pub fn encode_npy_as(tensor: &HostTensor, bf16: Bf16Npy) -> Vec<u8> {
    let descr = match tensor.dtype {
        DType::BFloat16 => bf16.descr(),
        other => other.npy_descr(),
    };
    let dict =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {}, }}", format_shape(&tensor.shape));
    // Header = dict + spaces + '\n', padded so that preamble + header is a multiple of 64.
    // Like numpy's `_wrap_header`, at least one space is written (64 when already aligned).
    let padded_len = |preamble: usize| {
        let unpadded = preamble + dict.len() + 1;
        dict.len() + 1 + (64 - unpadded % 64)
    };
    let (version, preamble) =
        if padded_len(10) <= usize::from(u16::MAX) { (1u8, 10usize) } else { (2u8, 12usize) };
    let header_len = padded_len(preamble);
    let mut out = Vec::with_capacity(preamble + header_len + tensor.bytes.len());
    out.extend_from_slice(MAGIC);
    out.push(version);
    out.push(0);
    if version == 1 {
        out.extend_from_slice(&(header_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header_len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(preamble + header_len - 1, b' ');
    out.push(b'\n');
    out.extend_from_slice(&tensor.bytes);
    out
}

/// Parses `.npy` contents; `path` is only used in error messages.
pub fn decode_npy(bytes: &[u8], path: &Path, expected: Option<DType>) -> Result<HostTensor, NpyError> {
    decode_npy_file(bytes, path, expected).map(|f| f.tensor)
}

/// [`decode_npy`], also telling which bfloat16 spelling the file used.
pub fn decode_npy_file(bytes: &[u8], path: &Path, expected: Option<DType>) -> Result<NpyFile, NpyError> {
    let p = || path.to_path_buf();
    if bytes.len() < 8 || &bytes[..6] != MAGIC {
        return Err(NpyError::BadMagic { path: p() });
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (len_bytes, utf8) = match (major, minor) {
        (1, 0) => (2usize, false),
        (2, 0) => (4, false),
        (3, 0) => (4, true),
        _ => return Err(NpyError::UnsupportedVersion { path: p(), major, minor }),
    };
    let Some(len_field) = bytes.get(8..8 + len_bytes) else {
        return Err(NpyError::Truncated { path: p(), what: "missing the header length".into() });
    };
    let header_len = if len_bytes == 2 {
        usize::from(u16::from_le_bytes([len_field[0], len_field[1]]))
    } else {
        u32::from_le_bytes([len_field[0], len_field[1], len_field[2], len_field[3]]) as usize
    };
    let data_start = 8 + len_bytes + header_len;
    let Some(header_bytes) = bytes.get(8 + len_bytes..data_start) else {
        return Err(NpyError::Truncated {
            path: p(),
            what: format!(
                "the header announces {header_len} bytes, the file has {}",
                bytes.len() - 8 - len_bytes
            ),
        });
    };
    let header = if utf8 {
        std::str::from_utf8(header_bytes)
            .map_err(|e| NpyError::BadHeader { path: p(), reason: format!("header is not UTF-8: {e}") })?
    } else {
        if !header_bytes.is_ascii() {
            return Err(NpyError::BadHeader {
                path: p(),
                reason: "a version 1.0/2.0 header must be ASCII".into(),
            });
        }
        // ASCII is valid UTF-8.
        std::str::from_utf8(header_bytes).unwrap_or_default()
    };
    let fields =
        parse_header(header).map_err(|fault| NpyError::BadHeader { path: p(), reason: fault.to_string() })?;
    if fields.fortran_order {
        return Err(NpyError::FortranOrder { path: p() });
    }
    let bf16 = Bf16Npy::ALL.into_iter().find(|b| b.descr() == fields.descr);
    let dtype = match fields.descr.as_str() {
        "<f2" => DType::Float16,
        _ if bf16.is_some() => DType::BFloat16,
        "<f4" => DType::Float32,
        "|i1" => DType::Int8,
        "<i4" => DType::Int32,
        "<i8" => DType::Int64,
        _ => return Err(NpyError::UnsupportedDescr { path: p(), descr: fields.descr }),
    };
    if let Some(expected) = expected {
        if expected != dtype {
            return Err(NpyError::DtypeMismatch { path: p(), expected, descr: fields.descr });
        }
    }
    let data = &bytes[data_start..];
    // A header may announce an absurd shape: overflow means "more than any file holds".
    let expected_bytes =
        fields.shape.iter().try_fold(dtype.size_bytes(), |acc, &d| acc.checked_mul(d)).unwrap_or(usize::MAX);
    if data.len() != expected_bytes {
        return Err(NpyError::SizeMismatch {
            path: p(),
            descr: fields.descr,
            shape: fields.shape,
            expected_bytes,
            actual_bytes: data.len(),
        });
    }
    Ok(NpyFile { tensor: HostTensor { dtype, shape: fields.shape, bytes: data.to_vec() }, bf16 })
}

/// What is wrong with a header dict (the text of `NpyError::BadHeader`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum HeaderFault {
    Expected { what: ExpectedText, at: usize },
    UnexpectedKey(String),
    MissingKey(&'static str),
    UnterminatedString,
    TrailingText,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExpectedText {
    Char(char),
    Word(&'static str),
}

impl fmt::Display for HeaderFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderFault::Expected { what: ExpectedText::Char(c), at } => {
                write!(f, "expected '{c}' at byte {at}")
            }
            HeaderFault::Expected { what: ExpectedText::Word(w), at } => {
                write!(f, "expected {w} at byte {at}")
            }
            HeaderFault::UnexpectedKey(key) => write!(f, "unexpected key '{key}'"),
            HeaderFault::MissingKey(key) => write!(f, "missing key '{key}'"),
            HeaderFault::UnterminatedString => f.write_str("unterminated string"),
            HeaderFault::TrailingText => f.write_str("unexpected text after the header dict"),
        }
    }
}

struct HeaderFields {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// Parses the header dict: `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }` with
/// keys in any order, either quote style, optional trailing commas, trailing whitespace.
fn parse_header(header: &str) -> Result<HeaderFields, HeaderFault> {
    let mut cur = Cursor { s: header.as_bytes(), i: 0 };
    cur.expect(b'{')?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        cur.skip_ws();
        if cur.eat(b'}') {
            break;
        }
        let key = cur.string()?;
        cur.skip_ws();
        cur.expect(b':')?;
        cur.skip_ws();
        match key.as_str() {
            "descr" => descr = Some(cur.string()?),
            "fortran_order" => fortran = Some(cur.boolean()?),
            "shape" => shape = Some(cur.tuple()?),
            other => return Err(HeaderFault::UnexpectedKey(other.to_string())),
        }
        cur.skip_ws();
        if !cur.eat(b',') {
            cur.skip_ws();
            cur.expect(b'}')?;
            break;
        }
    }
    cur.skip_ws();
    if cur.i != cur.s.len() {
        return Err(HeaderFault::TrailingText);
    }
    Ok(HeaderFields {
        descr: descr.ok_or(HeaderFault::MissingKey("descr"))?,
        fortran_order: fortran.ok_or(HeaderFault::MissingKey("fortran_order"))?,
        shape: shape.ok_or(HeaderFault::MissingKey("shape"))?,
    })
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), HeaderFault> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(HeaderFault::Expected { what: ExpectedText::Char(c as char), at: self.i })
        }
    }

    fn string(&mut self) -> Result<String, HeaderFault> {
        let quote = match self.s.get(self.i) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => {
                return Err(HeaderFault::Expected { what: ExpectedText::Word("a quoted string"), at: self.i })
            }
        };
        let start = self.i + 1;
        let len = self.s[start..].iter().position(|&c| c == quote).ok_or(HeaderFault::UnterminatedString)?;
        self.i = start + len + 1;
        Ok(String::from_utf8_lossy(&self.s[start..start + len]).into_owned())
    }

    fn boolean(&mut self) -> Result<bool, HeaderFault> {
        for (word, value) in [("True", true), ("False", false)] {
            if self.s[self.i..].starts_with(word.as_bytes()) {
                self.i += word.len();
                return Ok(value);
            }
        }
        Err(HeaderFault::Expected { what: ExpectedText::Word("True or False"), at: self.i })
    }

    fn tuple(&mut self) -> Result<Vec<usize>, HeaderFault> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            self.skip_ws();
            if self.eat(b')') {
                return Ok(dims);
            }
            let start = self.i;
            while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                self.i += 1;
            }
            // Python 2 era files may spell dims as `3L`.
            let digits = std::str::from_utf8(&self.s[start..self.i]).unwrap_or_default();
            let dim = digits.parse::<usize>().map_err(|_| HeaderFault::Expected {
                what: ExpectedText::Word("a non-negative dim"),
                at: start,
            })?;
            self.eat(b'L');
            dims.push(dim);
            self.skip_ws();
            if !self.eat(b',') {
                self.skip_ws();
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_byte_exact_against_the_spec() {
        // Written by hand from the NPY format spec (numpy/lib/format.py, version 1.0):
        // 6 magic bytes, version 1 0, u16 LE header length, dict text, spaces, '\n', such that
        // 10 + header length is a multiple of 64. The dict below is 59 bytes; 10 + 59 + '\n'
        // = 70, so 58 spaces of padding make 128 bytes and the header length is 118 = 0x76.
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        assert_eq!(dict.len(), 59);
        let mut expected: Vec<u8> = vec![0x93, b'N', b'U', b'M', b'P', b'Y', 1, 0, 0x76, 0x00];
        expected.extend_from_slice(dict.as_bytes());
        expected.extend(std::iter::repeat_n(b' ', 58));
        expected.push(b'\n');
        assert_eq!(expected.len(), 128);
        let values = [1.0, 2.0, 3.0, -4.0, 0.5, 0.0];
        for v in values {
            expected.extend_from_slice(&(v as f32).to_le_bytes());
        }
        let t = HostTensor::from_f64(DType::Float32, &[2, 3], &values);
        assert_eq!(encode_npy(&t), expected);
        // And it reads back.
        let back = decode_npy(&expected, Path::new("hand.npy"), Some(DType::Float32)).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn header_shapes_spelled_like_numpy() {
        // numpy writes () for scalars and (n,) for 1-D.
        let t = HostTensor::zeros(DType::Int8, &[]);
        let bytes = encode_npy(&t);
        let text = String::from_utf8_lossy(&bytes[10..]);
        assert!(text.starts_with("{'descr': '|i1', 'fortran_order': False, 'shape': (), }"));
        assert_eq!((bytes.len() - 1) % 64, 0); // one data byte after a 64-aligned header
        let t = HostTensor::zeros(DType::BFloat16, &[7]);
        let bytes = encode_npy(&t);
        let text = String::from_utf8_lossy(&bytes[10..]);
        assert!(text.starts_with("{'descr': '<u2', 'fortran_order': False, 'shape': (7,), }"));
        assert_eq!((bytes.len() - 14) % 64, 0);
    }

    #[test]
    fn round_trip_every_dtype_through_a_file() {
        let dir = crate::toolchain::scratch::ScratchDir::new("npy-test").unwrap();
        for dtype in DType::ALL {
            let shape = [2, 3, 5];
            let values: Vec<f64> = (0..30).map(|i| f64::from(i) * 1.25 - 17.0).collect();
            let t = HostTensor::from_f64(dtype, &shape, &values);
            let path = dir.path().join(format!("rt_{}.npy", dtype.name()));
            write_npy(&path, &t).unwrap();
            assert_eq!(read_npy(&path, Some(dtype)).unwrap(), t);
            assert_eq!(read_npy(&path, None).unwrap(), t);
        }
    }

    #[test]
    fn reads_versions_2_and_3_and_other_spellings() {
        let dict = b"{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"<i4\"}";
        let data: Vec<u8> = [7i32, -1, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
        for major in [2u8, 3] {
            let mut f = MAGIC.to_vec();
            f.extend_from_slice(&[major, 0]);
            let pad = 64 - (12 + dict.len() + 1) % 64;
            f.extend_from_slice(&((dict.len() + 1 + pad) as u32).to_le_bytes());
            f.extend_from_slice(dict);
            f.extend(std::iter::repeat_n(b' ', pad));
            f.push(b'\n');
            f.extend_from_slice(&data);
            let t = decode_npy(&f, Path::new("v.npy"), Some(DType::Int32)).unwrap();
            assert_eq!(t.shape, vec![3]);
            assert_eq!(t.to_i64(), vec![7, -1, 2]);
        }
    }

    fn file_with(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut f = MAGIC.to_vec();
        f.extend_from_slice(&[1, 0]);
        let pad = 64 - (10 + dict.len() + 1) % 64;
        f.extend_from_slice(&((dict.len() + 1 + pad) as u16).to_le_bytes());
        f.extend_from_slice(dict.as_bytes());
        f.extend(std::iter::repeat_n(b' ', pad));
        f.push(b'\n');
        f.extend_from_slice(data);
        f
    }

    #[test]
    fn errors_name_the_file_and_the_problem() {
        let path = Path::new("inputs/x.npy");
        let err = decode_npy(b"PK\x03\x04 not npy", path, None).unwrap_err();
        assert!(matches!(err, NpyError::BadMagic { .. }));
        assert!(err.to_string().starts_with("inputs/x.npy: not a .npy file (bad magic"));

        let f = file_with("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", &[0; 4]);
        let err = decode_npy(&f, path, None).unwrap_err();
        assert!(matches!(err, NpyError::UnsupportedDescr { ref descr, .. } if descr == ">f4"));
        assert!(err.to_string().contains("inputs/x.npy: unsupported dtype descr '>f4'"));

        let f = file_with("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", &[0; 16]);
        let err = decode_npy(&f, path, None).unwrap_err();
        assert!(matches!(err, NpyError::FortranOrder { .. }));
        assert!(err.to_string().starts_with("inputs/x.npy: fortran_order is True"));

        let f = file_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", &[0; 12]);
        let err = decode_npy(&f, path, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "inputs/x.npy: shape (2, 2) of '<f4' needs 16 data bytes, the file has 12"
        );

        // An fp32 file fed to an op expecting fp16 is an error, never a conversion.
        let f = file_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", &[0; 8]);
        let err = decode_npy(&f, path, Some(DType::Float16)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "inputs/x.npy: expected float16 (descr '<f2'), but the file holds descr '<f4'; \
             convert the array before saving, it is never converted silently"
        );
        // '<u2' is bfloat16 bits, so it cannot stand in for float16 either.
        let f = file_with("{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", &[0; 4]);
        assert!(matches!(
            decode_npy(&f, path, Some(DType::Float16)),
            Err(NpyError::DtypeMismatch { expected: DType::Float16, .. })
        ));
        let t = decode_npy(&f, path, Some(DType::BFloat16)).unwrap();
        assert_eq!(t.dtype, DType::BFloat16);

        let f = file_with("{'descr': '<f4', 'shape': (2,), }", &[0; 8]);
        let err = decode_npy(&f, path, None).unwrap_err();
        assert_eq!(err.to_string(), "inputs/x.npy: malformed .npy header: missing key 'fortran_order'");

        let mut f = MAGIC.to_vec();
        f.extend_from_slice(&[1, 0, 0x76, 0]);
        f.extend_from_slice(b"{'descr'");
        assert!(matches!(decode_npy(&f, path, None), Err(NpyError::Truncated { .. })));

        let mut f = MAGIC.to_vec();
        f.extend_from_slice(&[4, 0, 0, 0]);
        assert!(matches!(decode_npy(&f, path, None), Err(NpyError::UnsupportedVersion { major: 4, .. })));

        let err = read_npy(Path::new("/nonexistent/dir/y.npy"), None).unwrap_err();
        assert!(err.to_string().starts_with("/nonexistent/dir/y.npy: "));
    }

    #[test]
    fn huge_headers_switch_to_version_2() {
        // 30 000 dims of 1 ("1, " each) spell a shape tuple longer than a u16 header length allows.
        let t = HostTensor::zeros(DType::Float32, &vec![1; 30_000]);
        let bytes = encode_npy(&t);
        assert_eq!(&bytes[6..8], &[2, 0]);
        let header_len = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
        assert_eq!((12 + header_len) % 64, 0);
        assert_eq!(bytes[12 + header_len - 1], b'\n');
        assert_eq!(decode_npy(&bytes, Path::new("big.npy"), None).unwrap(), t);
    }

    #[test]
    fn bf16_bits_survive_unchanged() {
        // Every bf16 pattern (including NaN payloads) is stored and read back bit for bit.
        let bits: Vec<u64> = (0..=u16::MAX).map(u64::from).collect();
        let t = HostTensor::from_bits(DType::BFloat16, &[256, 256], &bits);
        let back = decode_npy(&encode_npy(&t), Path::new("b.npy"), Some(DType::BFloat16)).unwrap();
        assert_eq!(back.bytes, t.bytes);
    }
}
