//! Go's `text/template` language, read far enough to follow what a chart
//! does with its values: actions and their pipelines, `if`, `with`,
//! `range` (with `else` and `else if`/`else with`), `define`, `template`
//! and `block`, variables, parenthesised pipelines and field chains. Text
//! between actions and comments are skipped. The grammar is the one of Go's
//! `text/template/parse` package (`lex.go`, `parse.go`, `node.go`): `{{-`
//! and `-}}` trim markers need a space beside the dash, a field chain binds
//! to the term it follows without a space between them, and a pipeline's
//! commands are separated by `|`.
//!
//! A template that does not parse is not an error here (helm renders the
//! chart, and says so): the actions read up to the fault are kept and the
//! fault is counted.

/// The deepest nesting of blocks (`if`, `with`, `range`, `define`) read;
/// a block deeper than this is a fault (helm's own parser has a limit too).
const MAX_BLOCKS: usize = 100;
/// The deepest nesting of parentheses in one action.
const MAX_PARENS: usize = 32;

/// One operand of a command.
#[derive(Clone, Debug, PartialEq)]
pub enum Opd {
    /// `.a.b` on the dot (`.` alone: no fields).
    Field(Vec<String>),
    /// `$x.a.b` (`$` alone is the name `$`).
    Var(String, Vec<String>),
    /// A function name.
    Ident(String),
    /// A string constant, unquoted.
    Str(String),
    /// A number, character, `true`, `false` or `nil`.
    Lit,
    /// `(pipeline).a.b`.
    Paren(Box<Pipe>, Vec<String>),
}

/// A pipeline: optional variable declarations, then commands joined by `|`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pipe {
    pub decl: Vec<String>,
    /// `$x = …` sets a variable declared before; `$x := …` declares one.
    pub assign: bool,
    pub cmds: Vec<Vec<Opd>>,
}

/// A node of a parsed template, with the line of its action.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `{{ pipeline }}`: its value is written out.
    Action(Pipe, u32),
    /// `if` with its `else if` arms, then `else`.
    If(Vec<(Pipe, Vec<Item>, u32)>, Vec<Item>),
    /// `with` with its `else with` arms, then `else`.
    With(Vec<(Pipe, Vec<Item>, u32)>, Vec<Item>),
    /// `range pipeline`, its body and its `else`.
    Range(Pipe, Vec<Item>, Vec<Item>, u32),
    /// `template "name" pipeline` (also what `block` calls).
    Template(String, Option<Pipe>, u32),
}

/// A parsed file: what it renders, and the templates it defines.
#[derive(Clone, Debug, Default)]
pub struct Parsed {
    pub body: Vec<Item>,
    pub defines: Vec<(String, Vec<Item>)>,
    /// Actions that did not parse.
    pub faults: usize,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Field(String),
    Dot,
    Var(String),
    Ident(String),
    Str(String),
    Lit,
    Open,
    Close,
    Pipe,
    Declare,
    Assign,
    Comma,
}

/// A token and whether a space came before it.
type Spaced = (Tok, bool);

/// One action: its tokens and the line it starts on.
struct Action {
    toks: Vec<Spaced>,
    line: u32,
}

/// Splits a template into its actions; `None` in the list is an action
/// that does not lex (an unclosed string, a stray character).
fn actions(text: &str) -> Vec<Option<Action>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1u32;
    let mut counted = 0;
    while let Some(at) = find(b, i, b"{{") {
        line += count_lines(&b[counted..at]);
        counted = at;
        let mut j = at + 2;
        if b.get(j) == Some(&b'-') && b.get(j + 1).is_some_and(|c| c.is_ascii_whitespace()) {
            j += 2;
        }
        while b.get(j).is_some_and(|c| c.is_ascii_whitespace()) {
            j += 1;
        }
        if b[j..].starts_with(b"/*") {
            // A comment runs to `*/`, then the closing delimiter.
            let Some(end) = find(b, j + 2, b"*/") else { break };
            i = find(b, end + 2, b"}}").map_or(b.len(), |e| e + 2);
            continue;
        }
        let (toks, end) = lex_action(b, j);
        out.push(toks.map(|toks| Action { toks, line }));
        match end {
            Some(e) => i = e,
            None => break,
        }
    }
    out
}

fn count_lines(b: &[u8]) -> u32 {
    memchr::memchr_iter(b'\n', b).count() as u32
}

fn find(b: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    if from >= b.len() {
        return None;
    }
    memchr::memmem::find(&b[from..], pat).map(|p| p + from)
}

fn ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// The tokens of one action from `i` (after `{{`), and where the text goes
/// on after its `}}`; `None` tokens when the action does not lex, `None`
/// end when the template ends inside it.
fn lex_action(b: &[u8], mut i: usize) -> (Option<Vec<Spaced>>, Option<usize>) {
    let mut toks: Vec<Spaced> = Vec::new();
    let mut spaced = false;
    loop {
        let Some(&c) = b.get(i) else { return (None, None) };
        if c == b'-' && b.get(i + 1) == Some(&b'}') && b.get(i + 2) == Some(&b'}') && spaced {
            return (Some(toks), Some(i + 3));
        }
        if c == b'}' && b.get(i + 1) == Some(&b'}') {
            return (Some(toks), Some(i + 2));
        }
        if c.is_ascii_whitespace() {
            spaced = true;
            i += 1;
            continue;
        }
        let (tok, next) = match lex_token(b, i) {
            Some(t) => t,
            None => {
                // Skip to the end of the action.
                let end = find(b, i, b"}}").map(|e| e + 2);
                return (None, end);
            }
        };
        toks.push((tok, spaced));
        spaced = false;
        i = next;
    }
}

/// One token at `i`, and where the next starts.
fn lex_token(b: &[u8], i: usize) -> Option<(Tok, usize)> {
    let c = b[i];
    let next = b.get(i + 1).copied();
    Some(match c {
        b'(' => (Tok::Open, i + 1),
        b')' => (Tok::Close, i + 1),
        b'|' => (Tok::Pipe, i + 1),
        b',' => (Tok::Comma, i + 1),
        b':' if next == Some(b'=') => (Tok::Declare, i + 2),
        b'=' => (Tok::Assign, i + 1),
        b'"' => {
            let (s, end) = quoted(b, i)?;
            (Tok::Str(s), end)
        }
        b'`' => {
            let end = find(b, i + 1, b"`")?;
            (Tok::Str(String::from_utf8_lossy(&b[i + 1..end]).into_owned()), end + 1)
        }
        b'\'' => {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'\'' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            (Tok::Lit, (j + 1).min(b.len()))
        }
        b'$' => {
            let end = i + 1 + b[i + 1..].iter().take_while(|c| ident_byte(**c)).count();
            (Tok::Var(String::from_utf8_lossy(&b[i..end]).into_owned()), end)
        }
        b'.' if next.is_some_and(|n| n.is_ascii_digit()) => number(b, i),
        b'.' => {
            let end = i + 1 + b[i + 1..].iter().take_while(|c| ident_byte(**c)).count();
            if end == i + 1 {
                (Tok::Dot, end)
            } else {
                (Tok::Field(String::from_utf8_lossy(&b[i + 1..end]).into_owned()), end)
            }
        }
        b'0'..=b'9' => number(b, i),
        b'+' | b'-' if next.is_some_and(|n| n.is_ascii_digit() || n == b'.') => number(b, i),
        c if ident_byte(c) => {
            let end = i + b[i..].iter().take_while(|c| ident_byte(**c)).count();
            let word = String::from_utf8_lossy(&b[i..end]).into_owned();
            let tok = match word.as_str() {
                "true" | "false" | "nil" => Tok::Lit,
                _ => Tok::Ident(word),
            };
            (tok, end)
        }
        _ => return None,
    })
}

fn number(b: &[u8], i: usize) -> (Tok, usize) {
    let mut j = i + 1;
    while let Some(&c) = b.get(j) {
        let exponent_sign = (c == b'+' || c == b'-') && matches!(b[j - 1], b'e' | b'E' | b'p' | b'P');
        if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || exponent_sign {
            j += 1;
        } else {
            break;
        }
    }
    (Tok::Lit, j)
}

/// A double-quoted Go string at `i`, unescaped (the common escapes; the
/// others are kept as written), and where it ends.
fn quoted(b: &[u8], i: usize) -> Option<(String, usize)> {
    let mut out = Vec::new();
    let mut j = i + 1;
    loop {
        match *b.get(j)? {
            b'"' => return Some((String::from_utf8_lossy(&out).into_owned(), j + 1)),
            b'\n' => return None,
            b'\\' => {
                let e = *b.get(j + 1)?;
                match e {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'"' | b'\\' | b'\'' => out.push(e),
                    _ => out.extend_from_slice(&[b'\\', e]),
                }
                j += 2;
            }
            c => {
                out.push(c);
                j += 1;
            }
        }
    }
}

/// Parses a template file.
pub fn parse(text: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let mut stack: Vec<Frame> = vec![Frame::new(Kind::Top, Pipe::default(), 0)];
    for action in actions(text) {
        let Some(Action { toks, line }) = action else {
            parsed.faults += 1;
            continue;
        };
        if step(&mut stack, &mut parsed, &toks, line).is_none() {
            parsed.faults += 1;
        }
    }
    // Blocks left open are closed where the text ends.
    while stack.len() > 1 {
        parsed.faults += 1;
        close(&mut stack, &mut parsed);
    }
    parsed.body = stack.pop().map(|f| f.items).unwrap_or_default();
    parsed
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Top,
    If,
    With,
    Range,
    Define,
}

/// An open block: its kind, the arms read so far and the one being read.
struct Frame {
    kind: Kind,
    /// `define` and `block`: the name.
    name: String,
    /// `block`: it is also called where it stands, with this pipeline.
    block_call: Option<Pipe>,
    arms: Vec<(Pipe, Vec<Item>, u32)>,
    pipe: Pipe,
    line: u32,
    items: Vec<Item>,
    in_else: bool,
    else_items: Vec<Item>,
}

impl Frame {
    fn new(kind: Kind, pipe: Pipe, line: u32) -> Frame {
        Frame {
            kind,
            name: String::new(),
            block_call: None,
            arms: Vec::new(),
            pipe,
            line,
            items: Vec::new(),
            in_else: false,
            else_items: Vec::new(),
        }
    }

    fn push(&mut self, item: Item) {
        if self.in_else {
            self.else_items.push(item);
        } else {
            self.items.push(item);
        }
    }
}

/// Takes one action into the open blocks; `None` when it does not parse.
fn step(stack: &mut Vec<Frame>, parsed: &mut Parsed, toks: &[Spaced], line: u32) -> Option<()> {
    let keyword = match toks.first() {
        Some((Tok::Ident(w), _)) => w.as_str(),
        _ => "",
    };
    let rest = toks.get(1..).unwrap_or_default();
    match keyword {
        "if" | "with" | "range" | "define" | "block" if stack.len() > MAX_BLOCKS => return None,
        "if" | "with" | "range" => {
            let kind = match keyword {
                "if" => Kind::If,
                "with" => Kind::With,
                _ => Kind::Range,
            };
            stack.push(Frame::new(kind, pipeline(rest)?, line));
        }
        "else" => {
            let top = stack
                .last_mut()
                .filter(|f| f.kind != Kind::Top && f.kind != Kind::Define)?;
            match rest.first() {
                Some((Tok::Ident(w), _)) if (w == "if" || w == "with") && top.kind != Kind::Range => {
                    // `else if`/`else with`: one more arm of the same block.
                    let pipe = pipeline(&rest[1..])?;
                    let done = std::mem::take(&mut top.items);
                    let old = std::mem::replace(&mut top.pipe, pipe);
                    top.arms.push((old, done, top.line));
                    top.line = line;
                }
                _ => top.in_else = true,
            }
        }
        "end" => {
            if stack.len() < 2 {
                return None;
            }
            close(stack, parsed);
        }
        "define" | "block" => {
            let Some((Tok::Str(name), _)) = rest.first() else {
                return None;
            };
            let mut f = Frame::new(Kind::Define, Pipe::default(), line);
            f.name = name.clone();
            if keyword == "block" {
                f.block_call = Some(pipeline(&rest[1..])?);
            }
            stack.push(f);
        }
        "template" => {
            let Some((Tok::Str(name), _)) = rest.first() else {
                return None;
            };
            let pipe = if rest.len() > 1 {
                Some(pipeline(&rest[1..])?)
            } else {
                None
            };
            stack.last_mut()?.push(Item::Template(name.clone(), pipe, line));
        }
        "break" | "continue" => {}
        _ => {
            let pipe = pipeline(toks)?;
            stack.last_mut()?.push(Item::Action(pipe, line));
        }
    }
    Some(())
}

/// Closes the innermost block into its parent.
fn close(stack: &mut Vec<Frame>, parsed: &mut Parsed) {
    let Some(mut f) = stack.pop() else { return };
    let item = match f.kind {
        Kind::Top => return,
        Kind::Define => {
            parsed.defines.push((f.name.clone(), f.items));
            match f.block_call {
                Some(pipe) => Item::Template(f.name, Some(pipe), f.line),
                None => return,
            }
        }
        Kind::If | Kind::With => {
            f.arms.push((f.pipe, f.items, f.line));
            if f.kind == Kind::If {
                Item::If(f.arms, f.else_items)
            } else {
                Item::With(f.arms, f.else_items)
            }
        }
        Kind::Range => Item::Range(f.pipe, f.items, f.else_items, f.line),
    };
    if let Some(parent) = stack.last_mut() {
        parent.push(item);
    }
}

/// A pipeline from its tokens.
fn pipeline(toks: &[Spaced]) -> Option<Pipe> {
    let mut pipe = Pipe::default();
    let mut rest = toks;
    // `$a := `, `$a, $b := `, `$a = `.
    let decl_end = toks
        .iter()
        .position(|(t, _)| matches!(t, Tok::Declare | Tok::Assign))
        .filter(|&p| toks[..p].iter().all(|(t, _)| matches!(t, Tok::Var(_) | Tok::Comma)) && p > 0);
    if let Some(p) = decl_end {
        pipe.decl = toks[..p]
            .iter()
            .filter_map(|(t, _)| match t {
                Tok::Var(v) => Some(v.clone()),
                _ => None,
            })
            .collect();
        pipe.assign = toks[p].0 == Tok::Assign;
        rest = &toks[p + 1..];
    }
    let mut depth = 0usize;
    let mut start = 0;
    for (i, (t, _)) in rest.iter().enumerate() {
        match t {
            Tok::Open if depth == MAX_PARENS => return None,
            Tok::Open => depth += 1,
            Tok::Close => depth = depth.checked_sub(1)?,
            Tok::Pipe if depth == 0 => {
                pipe.cmds.push(command(&rest[start..i])?);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return None;
    }
    pipe.cmds.push(command(&rest[start..])?);
    Some(pipe)
}

/// One command: its operands.
fn command(toks: &[Spaced]) -> Option<Vec<Opd>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let (opd, next) = operand(toks, i)?;
        out.push(opd);
        i = next;
    }
    (!out.is_empty()).then_some(out)
}

/// The operand at `i`: a term and the fields that follow it without a
/// space; and where the next operand starts.
fn operand(toks: &[Spaced], i: usize) -> Option<(Opd, usize)> {
    let (term, mut j) = match &toks[i].0 {
        Tok::Dot => (Opd::Field(Vec::new()), i + 1),
        Tok::Field(f) => (Opd::Field(vec![f.clone()]), i + 1),
        Tok::Var(v) => (Opd::Var(v.clone(), Vec::new()), i + 1),
        Tok::Ident(f) => (Opd::Ident(f.clone()), i + 1),
        Tok::Str(s) => (Opd::Str(s.clone()), i + 1),
        Tok::Lit => (Opd::Lit, i + 1),
        Tok::Open => {
            let mut depth = 0usize;
            let close = (i..toks.len()).find(|&k| {
                match toks[k].0 {
                    Tok::Open => depth += 1,
                    Tok::Close => depth -= 1,
                    _ => {}
                }
                depth == 0
            })?;
            let inner = pipeline(&toks[i + 1..close])?;
            (Opd::Paren(Box::new(inner), Vec::new()), close + 1)
        }
        _ => return None,
    };
    let mut chain = Vec::new();
    while let Some((Tok::Field(f), false)) = toks.get(j) {
        chain.push(f.clone());
        j += 1;
    }
    let opd = match term {
        Opd::Field(mut fs) => {
            fs.extend(chain);
            Opd::Field(fs)
        }
        Opd::Var(v, _) => Opd::Var(v, chain),
        Opd::Paren(p, _) => Opd::Paren(p, chain),
        other if chain.is_empty() => other,
        _ => return None,
    };
    Some((opd, j))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(f: &[&str]) -> Opd {
        Opd::Field(f.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn actions_blocks_and_defines() {
        let t = "a {{- /* c {{ */ -}}\n{{ if .Values.a.b }}x{{ else if not .Values.c }}{{ .Values.d | quote }}{{ else }}y{{ end }}\n\
                 {{- define \"n\" -}}{{ .x }}{{- end -}}\n{{ range $k, $v := .Values.m }}{{ $v.n }}{{ end }}";
        let p = parse(t);
        assert_eq!(p.faults, 0);
        assert_eq!(p.defines.len(), 1);
        assert_eq!(p.defines[0].0, "n");
        let Item::If(arms, els) = &p.body[0] else {
            panic!("{:?}", p.body)
        };
        assert_eq!(arms.len(), 2);
        assert_eq!(arms[0].0.cmds[0], vec![field(&["Values", "a", "b"])]);
        assert_eq!(arms[1].2, 2);
        assert_eq!(arms[1].1.len(), 1);
        assert_eq!(els.len(), 0);
        let Item::Range(pipe, body, _, line) = &p.body[1] else {
            panic!()
        };
        assert_eq!(*line, 4);
        assert_eq!(pipe.decl, vec!["$k", "$v"]);
        assert_eq!(
            body[0],
            Item::Action(pipe_of(vec![vec![Opd::Var("$v".into(), vec!["n".into()])]]), 4)
        );
    }

    fn pipe_of(cmds: Vec<Vec<Opd>>) -> Pipe {
        Pipe {
            decl: Vec::new(),
            assign: false,
            cmds,
        }
    }

    #[test]
    fn chains_bind_without_spaces_and_strings_hide_delimiters() {
        let p = parse("{{ (index .Values \"a}}\").b .c $.Values.x }}");
        let Item::Action(pipe, _) = &p.body[0] else { panic!() };
        let cmd = &pipe.cmds[0];
        assert_eq!(cmd.len(), 3);
        assert!(matches!(&cmd[0], Opd::Paren(_, chain) if chain == &vec!["b".to_owned()]));
        assert_eq!(cmd[1], field(&["c"]));
        assert_eq!(cmd[2], Opd::Var("$".into(), vec!["Values".into(), "x".into()]));
        // `-}}` trims only after a space: `{{ 3 -}}` is a number, then the marker.
        let p = parse("{{ sub 4 3 -}}");
        assert_eq!(p.faults, 0);
    }

    #[test]
    fn broken_actions_are_counted_not_fatal() {
        let p = parse("{{ if .a }}{{ \"open }}{{ .b }}");
        assert!(p.faults >= 1);
        let p = parse("{{ end }}{{ .a ) }}");
        assert_eq!(p.faults, 2);
        // Nesting past the limits is a fault, not a deep recursion.
        let deep = "{{ if .a }}".repeat(10_000);
        assert!(parse(&deep).faults > 0);
        let parens = format!("{{{{ {}.a{} }}}}", "(".repeat(10_000), ")".repeat(10_000));
        assert_eq!(parse(&parens).faults, 1);
    }
}
