//! Writes `src/ras/generated.rs` from the ASN.1 modules in `asn1/`; run by `asn1/regenerate`.
//! A crate of its own, so that it builds even when the generated file it replaces does not.

mod generate;

fn main() {
    let (code, repaired) = generate::generate();
    let path = generate::root().join(generate::GENERATED);
    if let Err(error) = std::fs::write(&path, &code) {
        eprintln!("cannot write {}: {error}", path.display());
        std::process::exit(1);
    }
    println!("wrote {}: {} lines", generate::GENERATED, code.lines().count());
    println!("repaired {} extension additions:", repaired.len());
    for field in &repaired {
        println!("  {field}");
    }
}
