//! No input makes the front end panic: random bytes, random token soup, and mutations of valid
//! `.kir` files go through parse → verify → CFG → print → format, which must either succeed or return
//! diagnostics. Whatever parses must print to text that re-parses to the same module.

use kir_ir::*;
use proptest::prelude::*;

const SEED_FILE: &str = r#"; a loop with block parameters, shared memory, a barrier and a shuffle
kernel @k(%x: ptr<global, f32>, %out: ptr<global, f32>, %n: u32) {
  shared @tile: f32[256]
entry:
  %t = tid.x
  %i = global_id.x : u32
  %tile = addr @tile
  %in = lt.u32 %i, %n
  %v = load %x[%i]
  %v0 = select.f32 %in, %v, 0.0
  store %tile[%t], %v0
  barrier
  jmp loop(0, 0.0)
loop(%j: u32, %acc: f32):
  %e = load %tile[%j]
  %acc2 = add.f32 %acc, %e
  %j2 = add.u32 %j, 1
  %more = lt.u32 %j2, 256
  br %more, loop(%j2, %acc2), done(%acc2)
done(%s: f32):
  %r = shfl.down.f32 %s, 16, 0xffffffff
  %w = fma.rz.f32 %r, 0f3f800000, -0.0
  %c = cvt.rni.s32.f32 %w
  %h = cvt.f16.f32 %w
  store %out[%i], %w
  ret
}
"#;

/// Everything the front end does with a text; panics are the only failure.
fn exercise(src: &str) {
    let Ok(m) = parse(src) else { return };
    let _ = kir_ir::verify::verify_module(&m);
    for k in &m.kernels {
        let cfg = kir_ir::analysis::cfg::Cfg::new(k);
        let _ = cfg.to_dot(k);
        for b in k.block_ids() {
            let _ = cfg.ipdom(b);
            let _ = cfg.idom(b);
        }
    }
    let printed = print_module(&m);
    let again = parse(&printed).unwrap_or_else(|d| panic!("printed output does not parse: {d:?}\n{printed}"));
    assert!(again.structurally_eq(&m), "print/parse changed the module:\n{printed}");
    let formatted = kir_ir::text::format::format_source(src, &m);
    let from_formatted =
        parse(&formatted).unwrap_or_else(|d| panic!("formatted output does not parse: {d:?}\n{formatted}"));
    assert!(from_formatted.structurally_eq(&m), "formatting changed the module:\n{formatted}");
}

fn corpus() -> Vec<String> {
    let mut files = vec![SEED_FILE.to_string()];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels");
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut paths: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "kir"))
            .collect();
        paths.sort();
        // A file's imports are pasted in place (the library's functions become part of the text),
        // so every corpus file parses on its own.
        let lib = std::fs::read_to_string(dir.join("lib/reduce.kir")).unwrap_or_default();
        for p in paths {
            if let Ok(s) = std::fs::read_to_string(p) {
                files.push(s.replace("import \"lib/reduce.kir\"", &lib));
            }
        }
        files.push(lib);
    }
    files
}

const TOKENS: &[&str] = &[
    "%x",
    "%",
    "@",
    "@tile",
    "[",
    "]",
    "(",
    ")",
    "{",
    "}",
    ",",
    ":",
    "=",
    "br",
    "jmp",
    "ret",
    "kernel",
    "shared",
    "align",
    "ptr<",
    "global",
    ">",
    "0x",
    "-",
    "nan",
    "-inf",
    "0f7fc00000",
    "0h",
    "1e999",
    "99999999999999999999999",
    "\n",
    ";",
    "add.f32",
    "load",
    "store",
    "barrier",
    "entry:",
    "loop(",
    "u32",
    "f16",
    "pred",
    "true",
    "\u{00e9}",
    "\t",
    "addr",
    "atom.cas",
];

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, len: usize },
    Duplicate { at: usize, len: usize },
    Insert { at: usize, token: usize },
    SwapLines { a: usize, b: usize },
    Truncate { at: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..40).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), 1usize..60).prop_map(|(at, len)| Mutation::Duplicate { at, len }),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, token)| Mutation::Insert { at, token }),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines { a, b }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
    ]
}

/// Byte offsets are snapped to char boundaries so the mutated text stays valid UTF-8.
fn snap(s: &str, at: usize) -> usize {
    let mut i = at % (s.len() + 1);
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(src: &str, m: &Mutation) -> String {
    match *m {
        Mutation::Delete { at, len } => {
            let a = snap(src, at);
            let b = snap(src, (a + len).min(src.len()));
            format!("{}{}", &src[..a], &src[b.max(a)..])
        }
        Mutation::Duplicate { at, len } => {
            let a = snap(src, at);
            let b = snap(src, (a + len).min(src.len())).max(a);
            format!("{}{}{}", &src[..b], &src[a..b], &src[b..])
        }
        Mutation::Insert { at, token } => {
            let a = snap(src, at);
            format!("{} {} {}", &src[..a], TOKENS[token], &src[a..])
        }
        Mutation::SwapLines { a, b } => {
            let mut lines: Vec<&str> = src.lines().collect();
            if lines.len() > 1 {
                let (a, b) = (a % lines.len(), b % lines.len());
                lines.swap(a, b);
            }
            lines.join("\n")
        }
        Mutation::Truncate { at } => src[..snap(src, at)].to_string(),
    }
}

#[test]
fn the_corpus_itself_round_trips() {
    for f in corpus() {
        exercise(&f);
        assert!(parse(&f).is_ok(), "corpus file does not parse:\n{f}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        exercise(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn token_soup_never_panics(toks in proptest::collection::vec(0..TOKENS.len(), 0..80)) {
        let text: Vec<&str> = toks.iter().map(|&t| TOKENS[t]).collect();
        exercise(&text.join(" "));
    }

    #[test]
    fn mutated_valid_files_never_panic(file in any::<prop::sample::Index>(), muts in proptest::collection::vec(mutation(), 1..6)) {
        let files = corpus();
        let mut text = files[file.index(files.len())].clone();
        for m in &muts {
            text = apply(&text, m);
        }
        exercise(&text);
    }
}
