//! Print the kernel generated for an expression: `show_kernel EXPR NAME:FORMAT@DIMS ...`
//! (output first; e.g. `"y(i) = A(i,j) * x(j)" y:d@4 A:csr@4x4 x:d@4`).
fn main() {
    use sparsec::format::Format;
    use sparsec::notation::TensorDecl;
    let args: Vec<String> = std::env::args().collect();
    let mut decls = vec![];
    for a in &args[2..] {
        let (name, rest) = a.split_once(':').expect("NAME:FORMAT@DIMS");
        let (fmt, dims) = rest.split_once('@').expect("NAME:FORMAT@DIMS");
        let dims: Vec<usize> = dims
            .split('x')
            .map(|d| d.parse().expect("dimension"))
            .collect();
        let decl = TensorDecl::new(name)
            .with_dims(&dims)
            .with_format(Format::parse(fmt, dims.len()).expect("format"));
        decls.push(decl);
    }
    match sparsec::kernel::Kernel::compile(&args[1], &decls, &[]) {
        Ok(k) => println!("{}", k.kernel_source()),
        Err(e) => eprintln!("{e}"),
    }
}
