//! The VS Code TextMate grammar (editors/vscode/syntaxes/kir.tmLanguage.json) against the kernel
//! library and the lexer.
//!
//! A small TextMate engine is built here (fancy-regex; no TextMate crate reads the JSON form):
//! `match` with `name` and `captures`, `begin`/`end` with `name`, `contentName`, `beginCaptures`,
//! `endCaptures` and nested `patterns` (kept across lines), `include` of `#repository` rules and
//! `$self`. At each position the earliest match wins, ties going to the end pattern and then to the
//! first pattern listed, as in vscode-textmate. Lines are fed with their `\n` and patterns compiled
//! in multi-line mode, so `$` means the end of the line as in Oniguruma. (Not implemented, and not
//! used by the grammar: `\G`, `while`, back-references in `end`, injections.)
//!
//! Checked on every file in kernels/, kernels/lib/ and tests/filetests/barriers/:
//! - coverage: every non-whitespace character gets a scope besides the root `source.kir`;
//! - agreement with ir/src/lexer.rs: every token the lexer produces gets a scope of its kind
//!   (values `variable.*`, numbers `constant.numeric.*`, keywords, ops, labels, punctuation).
//!
//! And spot checks of single lines.

use fancy_regex::Regex;
use kir_ir::text::lexer::{tokens, Token};
use serde_json::Value;
use std::collections::HashMap;

const GRAMMAR: &str = "editors/vscode/syntaxes/kir.tmLanguage.json";

enum Rule {
    Match {
        re: Regex,
        name: Vec<String>,
        captures: Vec<(usize, Vec<String>)>,
    },
    BeginEnd {
        begin: Regex,
        end: Regex,
        name: Vec<String>,
        content_name: Vec<String>,
        begin_captures: Vec<(usize, Vec<String>)>,
        end_captures: Vec<(usize, Vec<String>)>,
        patterns: Vec<usize>,
    },
}

struct Grammar {
    scope: String,
    rules: Vec<Rule>,
    root: Vec<usize>,
}

fn scopes(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_str).map(|s| s.split_whitespace().map(str::to_string).collect()).unwrap_or_default()
}

fn capture_list(v: Option<&Value>) -> Vec<(usize, Vec<String>)> {
    let mut out: Vec<(usize, Vec<String>)> = v
        .and_then(Value::as_object)
        .map(|o| o.iter().map(|(k, c)| (k.parse().expect("capture index"), scopes(c.get("name")))).collect())
        .unwrap_or_default();
    out.sort_by_key(|c| c.0);
    out
}

fn compile(re: &str) -> Regex {
    Regex::new(&format!("(?m){re}")).unwrap_or_else(|e| panic!("bad regex {re:?}: {e}"))
}

impl Grammar {
    fn load(path: &str) -> Grammar {
        let text = std::fs::read_to_string(path).unwrap();
        let json: Value = serde_json::from_str(&text).expect("the grammar is valid JSON");
        let mut g =
            Grammar { scope: json["scopeName"].as_str().unwrap().to_string(), rules: Vec::new(), root: Vec::new() };
        let repo = json["repository"].as_object().expect("a repository").clone();
        let mut cache: HashMap<String, Vec<usize>> = HashMap::new();
        let root = json["patterns"].as_array().unwrap().clone();
        g.root = g.patterns(&root, &repo, &root, &mut cache, 0);
        g
    }

    /// Compiles a `patterns` list into leaf rule indices (includes expanded).
    fn patterns(
        &mut self,
        list: &[Value],
        repo: &serde_json::Map<String, Value>,
        root: &[Value],
        cache: &mut HashMap<String, Vec<usize>>,
        depth: usize,
    ) -> Vec<usize> {
        assert!(depth < 32, "include cycle");
        let mut out = Vec::new();
        for p in list {
            if let Some(inc) = p.get("include").and_then(Value::as_str) {
                if let Some(ids) = cache.get(inc) {
                    out.extend(ids.iter().copied());
                    continue;
                }
                let ids = if inc == "$self" || inc == "$base" {
                    self.patterns(root, repo, root, cache, depth + 1)
                } else {
                    let key = inc.strip_prefix('#').unwrap_or_else(|| panic!("unsupported include {inc}"));
                    let r = repo.get(key).unwrap_or_else(|| panic!("no repository rule {key}"));
                    self.patterns(std::slice::from_ref(r), repo, root, cache, depth + 1)
                };
                cache.insert(inc.to_string(), ids.clone());
                out.extend(ids);
            } else if let Some(m) = p.get("match").and_then(Value::as_str) {
                self.rules.push(Rule::Match {
                    re: compile(m),
                    name: scopes(p.get("name")),
                    captures: capture_list(p.get("captures")),
                });
                out.push(self.rules.len() - 1);
            } else if let Some(b) = p.get("begin").and_then(Value::as_str) {
                let end = p.get("end").and_then(Value::as_str).expect("begin without end");
                let inner = p.get("patterns").and_then(Value::as_array).cloned().unwrap_or_default();
                let inner = self.patterns(&inner, repo, root, cache, depth + 1);
                let caps = capture_list(p.get("captures"));
                let bc =
                    if p.get("beginCaptures").is_some() { capture_list(p.get("beginCaptures")) } else { caps.clone() };
                let ec = if p.get("endCaptures").is_some() { capture_list(p.get("endCaptures")) } else { caps };
                self.rules.push(Rule::BeginEnd {
                    begin: compile(b),
                    end: compile(end),
                    name: scopes(p.get("name")),
                    content_name: scopes(p.get("contentName")),
                    begin_captures: bc,
                    end_captures: ec,
                    patterns: inner,
                });
                out.push(self.rules.len() - 1);
            } else if let Some(ps) = p.get("patterns").and_then(Value::as_array) {
                let ps = ps.clone();
                out.extend(self.patterns(&ps, repo, root, cache, depth + 1));
            } else {
                panic!("a rule with neither match, begin, include nor patterns: {p}");
            }
        }
        out
    }

    /// Scopes of every byte of every line of `src` (root scope left out).
    fn tokenize(&self, src: &str) -> Vec<(String, Vec<Vec<String>>)> {
        let mut stack: Vec<usize> = Vec::new(); // open begin/end rules
        let mut out = Vec::new();
        for line in src.split('\n') {
            let text = format!("{line}\n");
            let mut sc: Vec<Vec<String>> = vec![Vec::new(); text.len()];
            let base = |stack: &[usize], with_content_of_top: bool| -> Vec<String> {
                let mut v = Vec::new();
                for (i, &r) in stack.iter().enumerate() {
                    if let Rule::BeginEnd { name, content_name, .. } = &self.rules[r] {
                        v.extend(name.iter().cloned());
                        if i + 1 < stack.len() || with_content_of_top {
                            v.extend(content_name.iter().cloned());
                        }
                    }
                }
                v
            };
            let paint = |sc: &mut Vec<Vec<String>>, a: usize, b: usize, s: &[String]| {
                for x in sc.iter_mut().take(b).skip(a) {
                    x.extend(s.iter().cloned());
                }
            };
            let paint_caps =
                |sc: &mut Vec<Vec<String>>, caps: &fancy_regex::Captures<'_, str>, list: &[(usize, Vec<String>)]| {
                    for (i, names) in list {
                        if let Some(m) = caps.get(*i) {
                            for x in sc.iter_mut().take(m.end()).skip(m.start()) {
                                x.extend(names.iter().cloned());
                            }
                        }
                    }
                };
            let mut pos = 0;
            let mut guard = 0;
            while pos < text.len() {
                guard += 1;
                assert!(guard < 10_000, "the engine loops on {line:?}");
                let patterns: &[usize] = match stack.last() {
                    Some(&r) => match &self.rules[r] {
                        Rule::BeginEnd { patterns, .. } => patterns,
                        Rule::Match { .. } => unreachable!(),
                    },
                    None => &self.root,
                };
                // (start, candidate): candidate None = the end pattern of the top rule.
                let mut best: Option<(usize, Option<usize>, fancy_regex::Captures<'_, str>)> = None;
                if let Some(&r) = stack.last() {
                    if let Rule::BeginEnd { end, .. } = &self.rules[r] {
                        if let Some(c) = end.captures_from_pos(text.as_str(), pos).unwrap() {
                            best = Some((c.get(0).unwrap().start(), None, c));
                        }
                    }
                }
                for &p in patterns {
                    let re = match &self.rules[p] {
                        Rule::Match { re, .. } => re,
                        Rule::BeginEnd { begin, .. } => begin,
                    };
                    if let Some(c) = re.captures_from_pos(text.as_str(), pos).unwrap() {
                        let s = c.get(0).unwrap().start();
                        let better = match &best {
                            Some(b) => s < b.0,
                            None => true,
                        };
                        if better {
                            best = Some((s, Some(p), c));
                        }
                    }
                }
                let Some((start, which, caps)) = best else { break };
                let end = caps.get(0).unwrap().end();
                let b = base(&stack, true);
                paint(&mut sc, pos, start, &b);
                match which {
                    None => {
                        let r = stack.pop().unwrap();
                        if let Rule::BeginEnd { end_captures, .. } = &self.rules[r] {
                            let mut s = base(&stack, true);
                            if let Rule::BeginEnd { name, .. } = &self.rules[r] {
                                s.extend(name.iter().cloned());
                            }
                            paint(&mut sc, start, end, &s);
                            paint_caps(&mut sc, &caps, end_captures);
                        }
                    }
                    Some(p) => match &self.rules[p] {
                        Rule::Match { name, captures, .. } => {
                            let mut s = b.clone();
                            s.extend(name.iter().cloned());
                            paint(&mut sc, start, end, &s);
                            paint_caps(&mut sc, &caps, captures);
                            if end == start {
                                // A zero-width match makes no progress: step over one character.
                                let next = text[pos..].chars().next().map_or(1, char::len_utf8);
                                paint(&mut sc, pos, pos + next, &b);
                                pos += next;
                                continue;
                            }
                        }
                        Rule::BeginEnd { name, begin_captures, .. } => {
                            let mut s = b.clone();
                            s.extend(name.iter().cloned());
                            paint(&mut sc, start, end, &s);
                            paint_caps(&mut sc, &caps, begin_captures);
                            stack.push(p);
                        }
                    },
                }
                pos = end;
            }
            let b = base(&stack, true);
            paint(&mut sc, pos, text.len(), &b);
            sc.pop(); // the '\n'
            out.push((line.to_string(), sc));
        }
        out
    }
}

fn corpus() -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for dir in ["kernels", "kernels/lib", "tests/filetests/barriers"] {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "kir") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 20, "{files:?}");
    files
}

/// Scopes per byte of the whole file (lines joined with one byte for each `\n`).
fn file_scopes(g: &Grammar, src: &str) -> Vec<Vec<String>> {
    let mut all = Vec::with_capacity(src.len());
    for (_, sc) in g.tokenize(src) {
        all.extend(sc);
        all.push(Vec::new());
    }
    all.pop();
    all
}

#[test]
fn grammar_is_valid_and_names_the_language() {
    let g = Grammar::load(GRAMMAR);
    assert_eq!(g.scope, "source.kir");
    assert!(g.rules.len() > 20);
    let pkg: Value = serde_json::from_str(&std::fs::read_to_string("editors/vscode/package.json").unwrap()).unwrap();
    let grammars = pkg["contributes"]["grammars"].as_array().unwrap();
    assert_eq!(grammars[0]["scopeName"], "source.kir");
    assert_eq!(grammars[0]["path"], "./syntaxes/kir.tmLanguage.json");
    assert_eq!(pkg["contributes"]["languages"][0]["extensions"][0], ".kir");
    assert_eq!(pkg["contributes"]["configuration"]["properties"]["kir.serverPath"]["default"], "kir");
    let conf: Value =
        serde_json::from_str(&std::fs::read_to_string("editors/vscode/language-configuration.json").unwrap()).unwrap();
    assert_eq!(conf["comments"]["lineComment"], ";");
}

/// Every non-whitespace character of every kernel file gets a scope.
#[test]
fn every_character_of_the_library_is_scoped() {
    let g = Grammar::load(GRAMMAR);
    let mut problems = Vec::new();
    for f in corpus() {
        let src = std::fs::read_to_string(&f).unwrap();
        for (n, (line, sc)) in g.tokenize(&src).iter().enumerate() {
            for (i, c) in line.char_indices() {
                if !c.is_whitespace() && sc[i].is_empty() {
                    problems.push(format!("{}:{}:{}: `{c}` unscoped in {line:?}", f.display(), n + 1, i + 1));
                    break;
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The scope each lexer token gets must be one for its kind.
fn expected(tok: &Token) -> &'static [&'static str] {
    match tok {
        Token::Kernel | Token::Graph => &["storage.type.kernel"],
        Token::Func => &["storage.type.function"],
        Token::Import => &["keyword.other.import"],
        Token::Str(_) => &["string.quoted"],
        Token::Arrow => &["keyword.operator.arrow"],
        Token::Shared => &["storage.modifier.shared", "storage.modifier.address-space"],
        Token::Launch => &["keyword.other.launch"],
        Token::Temp => &["storage.modifier.temp"],
        Token::Align => &["storage.modifier.align"],
        Token::Br | Token::Jmp | Token::Ret => &["keyword.control"],
        Token::True | Token::False => &["constant.language.boolean"],
        Token::Inf | Token::NegInf => &["constant.language.infinity"],
        Token::Nan => &["constant.language.nan"],
        Token::Def(_) => &["variable.other.definition"],
        Token::Value(_) => &["variable."],
        // `%l = laneid : u32` lexes `laneid :` as a label.
        Token::Label(_) => &["entity.name.label.kir", "support.function.op"],
        Token::CallOpen(_) => &["entity.name.label", "support.function.attribute", "support.function.builtin"],
        Token::Global(_) => &["variable.other.global", "entity.name.function"],
        // `call` lexes as an identifier (it is an op): the grammar makes it a keyword.
        Token::Ident("call") => &["keyword.other.call"],
        Token::Ident(_) => {
            &["support.function.op", "storage.type", "storage.modifier.address-space", "entity.name.label.reference"]
        }
        Token::Int(_) | Token::Float(_) | Token::HexFloat(_) => &["constant.numeric"],
        Token::Eq => &["keyword.operator.assignment"],
        _ => &["punctuation."],
    }
}

#[test]
fn every_lexer_token_gets_a_scope_of_its_kind() {
    let g = Grammar::load(GRAMMAR);
    let mut problems = Vec::new();
    let mut count = 0;
    for f in corpus() {
        let src = std::fs::read_to_string(&f).unwrap();
        let sc = file_scopes(&g, &src);
        for t in tokens(&src) {
            let Ok((l, tok, r)) = t else { panic!("{} does not lex", f.display()) };
            count += 1;
            let want = expected(&tok);
            let ok = |at: usize, want: &[&str]| sc[at].iter().any(|s| want.iter().any(|w| s.starts_with(w)));
            let mut good = ok(l, want);
            if let Token::Def(_) = tok {
                // `%x =`: the `=` is the assignment operator.
                good &= ok(r - 1, &["keyword.operator.assignment"]);
            }
            if let Token::CallOpen(_) = tok {
                good &= ok(r - 1, &["punctuation.section.parens.begin"]);
            }
            if !good {
                let line = src[..l].matches('\n').count() + 1;
                problems.push(format!(
                    "{}:{line}: token {tok} ({:?}) has scopes {:?}, wanted one of {want:?}",
                    f.display(),
                    &src[l..r],
                    sc[l]
                ));
            }
        }
    }
    assert!(count > 10_000, "{count}");
    assert!(problems.is_empty(), "{}", problems[..problems.len().min(40)].join("\n"));
}

/// The scopes of the first occurrence of `what` in `line`.
fn scope_of(g: &Grammar, line: &str, what: &str) -> Vec<String> {
    let at = line.find(what).unwrap_or_else(|| panic!("{what} not in {line}"));
    let t = g.tokenize(line);
    let sc = &t[0].1;
    // Scopes every character of `what` has.
    let mut common = sc[at].clone();
    for x in &sc[at..at + what.len()] {
        common.retain(|s| x.contains(s));
    }
    common
}

fn has(g: &Grammar, line: &str, what: &str, scope: &str) {
    let s = scope_of(g, line, what);
    assert!(s.iter().any(|x| x == scope), "`{what}` in {line:?}: {s:?}, wanted {scope}");
}

#[test]
fn spot_checks() {
    let g = Grammar::load(GRAMMAR);
    let l = "  %x = add.f32 %a, %b ; sum";
    has(&g, l, "%x", "variable.other.definition.kir");
    has(&g, l, "add.f32", "meta.op.kir");
    has(&g, l, "add", "support.function.op.kir");
    has(&g, l, ".f32", "support.function.op.modifier.kir");
    has(&g, l, "%a", "variable.other.kir");
    has(&g, l, "; sum", "comment.line.semicolon.kir");
    let l = "; run: @softmax_rows grid(13) block(64) x=rand:f32:3900:90 rows=13 tol=rel:3e-6";
    has(&g, l, "; run: @softmax_rows grid(13) block(64) x=rand", "meta.directive.test.kir");
    has(&g, l, "run", "keyword.other.directive.kir");
    has(&g, l, "@softmax_rows", "entity.name.function.kir");
    has(&g, l, "tol", "variable.parameter.directive.kir");
    has(&g, "; expect: @k y == [1, 2]", "expect", "keyword.other.directive.kir");
    has(&g, "; check-ptx: bar.sync 0", "check-ptx", "keyword.other.directive.kir");
    has(&g, "; check-ptx: bar.sync 0", "bar.sync 0", "comment.line.directive.kir");
    has(&g, ";; run: not a directive (the comment text starts with `;`)", "run", "comment.line.semicolon.kir");
    has(&g, "; fault: data race block(1)", "fault", "keyword.other.directive.kir");
    has(&g, "; test: verify", "test", "keyword.other.directive.kir");
    has(&g, "  ret ; error: unknown value", "error", "keyword.other.directive.kir");
    has(&g, "; warning: block `lost` is unreachable", "warning", "keyword.other.directive.kir");
    let l = "kernel @k(%p: ptr<global, f32>, %n: u32) reqntid(256) {";
    has(&g, l, "kernel", "storage.type.kernel.kir");
    has(&g, l, "@k", "entity.name.function.kir");
    has(&g, l, "%p", "variable.parameter.kir");
    has(&g, l, "ptr", "storage.type.pointer.kir");
    has(&g, l, "global", "storage.modifier.address-space.kir");
    has(&g, l, "f32", "storage.type.kir");
    has(&g, l, "u32", "storage.type.kir");
    has(&g, l, "reqntid", "support.function.attribute.kir");
    let masks = "kernel @k(%m: u32) assume_masks() {";
    has(&g, masks, "assume_masks", "support.function.attribute.kir");
    has(&g, "  shared @tile: f32[256] align 16", "shared", "storage.modifier.shared.kir");
    has(&g, "  shared @tile: f32[256] align 16", "@tile", "variable.other.global.kir");
    has(&g, "  shared @tile: f32[256] align 16", "align", "storage.modifier.align.kir");
    has(&g, "  shared @tile: f32[256] align 16", "256", "constant.numeric.integer.kir");
    has(&g, "entry:", "entry", "entity.name.label.kir");
    let l = "mx(%j: u32, %m: f32):";
    has(&g, l, "mx", "entity.name.label.kir");
    has(&g, l, "%j", "variable.parameter.kir");
    let l = "  br %c, then, else.x";
    has(&g, l, "br", "keyword.control.kir");
    has(&g, l, "then", "entity.name.label.reference.kir");
    has(&g, l, "else.x", "entity.name.label.reference.kir");
    has(&g, "  jmp mx(%tid, -inf)", "mx", "entity.name.label.reference.kir");
    has(&g, "  jmp mx(%tid, -inf)", "-inf", "constant.language.infinity.kir");
    has(&g, "  ret", "ret", "keyword.control.kir");
    has(&g, "  barrier", "barrier", "support.function.op.kir");
    has(&g, "  store %p[%i], %v", "store", "support.function.op.kir");
    has(&g, "  %p = nan.f32 %a, %b", "nan", "support.function.op.kir");
    has(&g, "  %q = select.f32 %c, nan, inf", "nan", "constant.language.nan.kir");
    has(&g, "  %q = select.f32 %c, nan, inf", "inf", "constant.language.infinity.kir");
    has(&g, "  %b = mov.pred true", "true", "constant.language.boolean.kir");
    has(&g, "  %h = mov.f32 0f3f800000", "0f3f800000", "constant.numeric.float.bits.kir");
    has(&g, "  %h = mov.f64 0d3ff0000000000000", "0d3ff0000000000000", "constant.numeric.float.bits.kir");
    has(&g, "  %h = mov.f16 0h3c00", "0h3c00", "constant.numeric.float.bits.kir");
    has(&g, "  %m = and.u32 %x, 0xffffffff", "0xffffffff", "constant.numeric.integer.hexadecimal.kir");
    has(&g, "  %f = mul.f32 %d, -1.5e-3", "-1.5e-3", "constant.numeric.float.kir");
    has(&g, "  %f = add.s32 %d, -7", "-7", "constant.numeric.integer.kir");
    has(&g, "  %l = laneid : u32", "laneid", "support.function.op.kir");
    has(&g, "  %l = laneid : u32", "u32", "storage.type.kir");
    let l = "  launch @relu grid(ceil_div(%n, 256)) block(256) (%x, %d, 1.0)";
    has(&g, l, "launch", "keyword.other.launch.kir");
    has(&g, l, "@relu", "entity.name.function.kir");
    has(&g, l, "grid", "support.function.attribute.kir");
    has(&g, l, "ceil_div", "support.function.builtin.kir");
    has(&g, "  temp %d: f32[%n]", "temp", "storage.modifier.temp.kir");
    has(&g, "graph @g(%n: u32) {", "graph", "storage.type.kernel.kir");
    // Device functions, calls and imports.
    let l = "func @warp_sum(%v: f32, %r: ptr<shared, f32>) -> f32 {";
    has(&g, l, "func", "storage.type.function.kir");
    has(&g, l, "@warp_sum", "entity.name.function.kir");
    has(&g, l, "%v", "variable.parameter.kir");
    has(&g, l, "->", "keyword.operator.arrow.kir");
    has(&g, l, "shared", "storage.modifier.address-space.kir");
    let l = "  %s = call @warp_sum(%f, %tp)";
    has(&g, l, "%s", "variable.other.definition.kir");
    has(&g, l, "=", "keyword.operator.assignment.kir");
    has(&g, l, "call", "keyword.other.call.kir");
    has(&g, l, "@warp_sum", "entity.name.function.kir");
    has(&g, l, "%tp", "variable.other.kir");
    let l = "  call @put(%out, %t, 1.5)";
    has(&g, l, "call", "keyword.other.call.kir");
    has(&g, l, "@put", "entity.name.function.kir");
    has(&g, l, "1.5", "constant.numeric.float.kir");
    has(&g, "  ret %s", "ret", "keyword.control.kir");
    has(&g, "  ret %s", "%s", "variable.other.kir");
    let l = "import \"lib/reduce.kir\" ; the reductions";
    has(&g, l, "import", "keyword.other.import.kir");
    has(&g, l, "\"lib/reduce.kir\"", "string.quoted.double.import.kir");
    has(&g, l, "\"", "punctuation.definition.string.begin.kir");
    has(&g, l, "; the reductions", "comment.line.semicolon.kir");
    // A label named like the new keywords is still a label.
    has(&g, "call:", "call", "entity.name.label.kir");
    has(&g, "  jmp call", "call", "entity.name.label.reference.kir");
    // The coverage check can fail: characters that start no token stay unscoped.
    let t = g.tokenize("  %x = add.u32 %a, $b # *");
    let sc = &t[0].1;
    for c in ['$', '#', '*'] {
        let at = t[0].0.find(c).unwrap();
        assert!(sc[at].is_empty(), "`{c}`: {:?}", sc[at]);
    }
    // Block comments do not exist: a `;` comment ends at the line's end.
    let t = g.tokenize("; one\n  ret");
    assert!(t[1].1[2].contains(&"keyword.control.kir".to_string()), "{:?}", t[1].1);
}
