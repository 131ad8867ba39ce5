//! Help text shared by subcommands that take a storage format or a tensor file: one
//! source for every `--help` that lists them.

/// The tensor files sparsec reads and writes.
pub const FILE_TYPES_HELP: &str = "\
FILE TYPES (chosen by extension):
  .mtx   MatrixMarket: coordinate or array; real, integer or pattern; general, symmetric,
         skew-symmetric or hermitian (symmetric files are expanded on reading). Order <= 2.
  .tns   FROSTT text: one `i1 ... iN value` line per entry, 1-based, any order; `#` comments.
  .spt   sparsec binary: a tensor stored exactly in its format, with its fill value
         (checksummed).
  .h5    binsparse in HDF5 (a sparsec built with the `binsparse` feature).";

/// What a format string (`-f NAME:FORMAT`, `convert --format`) may be, with examples.
pub const FORMAT_HELP: &str = "\
FORMATS (-f NAME:FORMAT, convert --format):
  Named formats:
    dense          every level dense (row-major)
    csr, csc       compressed sparse rows / columns (matrices)
    dcsr, dcsc     doubly compressed rows / columns (matrices)
    coo            coordinate list, any order; coo:1,0 sorts by column first
    csf            compressed sparse fibers, any order; csf:2,0,1 stores mode 2 first
    sv             sparse vector (order 1)
    hash           every level hashed
    ell            ELLPACK: slot, row, column (matrices)
    sell:C         sliced ELLPACK: slices of C rows (8 if not given), each padded to its
                   longest row; SpMV runs a slice's rows in SIMD lanes (matrices)
    dia            diagonals: diagonal, row range, column offset (matrices)
    bcsr:RxC       blocked CSR with R x C dense blocks, e.g. bcsr:4x4
  Level letters, one per mode, outermost first:
    d dense   s compressed   u compressed, non-unique   q singleton
    c singleton, non-unique   h hashed   b bytemap (dense positions, presence flags)
    r range   o offset (the row range and column offset of a diagonal: `dia`'s levels)
    `(!o)` / `(!u)` after a letter marks the level unordered / non-unique.
    `:M,M,...` after the letters is the mode ordering (level k stores mode M_k).
  Examples:
    ds = csr    ds:1,0 = csc    ss = dcsr    uq = coo (matrix)    dh = hashed columns
    sss:2,0,1   a CSF of an order-3 tensor storing mode 2, then 0, then 1
    ucq         a COO of an order-3 tensor
  Without a format, run and emit store a tensor dense; convert keeps an .spt input's
  format, else writes csr (matrices) or csf (other orders).";
