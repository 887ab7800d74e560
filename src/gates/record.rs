//! A decision record as `strata gates` reads and rewrites it: Markdown whose
//! rollout gates are task-list lines (`- [ ] text` / `- [x] text`) and
//! which says `Rollout: N of M gates` somewhere. Reading notes where each box
//! and each number sits; rewriting changes those bytes only, so every other
//! byte of the record — line endings included — stays as it was.

/// A task-list line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// 1-based line number.
    pub line: u32,
    /// The text after the box, trimmed.
    pub text: String,
    pub checked: bool,
    /// Byte offset of the character inside the box.
    box_at: usize,
}

/// A `Rollout: N of M gates` statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Count {
    pub line: u32,
    pub done: usize,
    pub total: usize,
    /// Byte ranges of the two numbers.
    done_at: (usize, usize),
    total_at: (usize, usize),
}

/// What `strata gates` reads in a record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    pub tasks: Vec<Task>,
    pub counts: Vec<Count>,
}

/// Lines of `text` with the byte offset of each, without their ending
/// (`\n` or `\r\n`).
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    text.split_inclusive('\n').map(move |raw| {
        let start = at;
        at += raw.len();
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        (start, line.strip_suffix('\r').unwrap_or(line))
    })
}

/// The offset of a list item's content after its marker (`-`, `*`, `+`,
/// `1.`, `1)`) and at least one space, if the line is a list item.
fn after_marker(line: &str) -> Option<usize> {
    let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
    let rest = &line[indent..];
    let marker = match rest.as_bytes().first()? {
        b'-' | b'*' | b'+' => 1,
        b'0'..=b'9' => {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            match rest.as_bytes().get(digits) {
                Some(b'.' | b')') if digits <= 9 => digits + 1,
                _ => return None,
            }
        }
        _ => return None,
    };
    let after = &rest[marker..];
    let spaces = after.len() - after.trim_start_matches([' ', '\t']).len();
    (spaces > 0).then_some(indent + marker + spaces)
}

/// A task-list line: the box character's offset in the line, whether it is
/// checked, and the text.
fn task(line: &str) -> Option<(usize, bool, &str)> {
    let at = after_marker(line)?;
    let rest = &line[at..];
    let b = rest.as_bytes();
    if b.len() < 3 || b[0] != b'[' || b[2] != b']' {
        return None;
    }
    let checked = match b[1] {
        b' ' => false,
        b'x' | b'X' => true,
        _ => return None,
    };
    let text = &rest[3..];
    if !(text.is_empty() || text.starts_with([' ', '\t'])) {
        return None;
    }
    Some((at + 1, checked, text.trim()))
}

/// A number in a line and its byte range.
type Number = (usize, (usize, usize));

/// The `N of M gates` statements of a line: N and M with their ranges.
fn counts(line: &str) -> Vec<(Number, Number)> {
    let mut out = Vec::new();
    let lower = line.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("rollout:") {
        let mut at = from + i + "rollout:".len();
        from = at;
        let skip = |at: &mut usize, chars: &[char]| {
            while let Some(c) = line[*at..].chars().next().filter(|c| chars.contains(c)) {
                *at += c.len_utf8();
            }
        };
        let number = |at: &mut usize| -> Option<Number> {
            let start = *at;
            let len = line[start..].bytes().take_while(u8::is_ascii_digit).count();
            if len == 0 || len > 6 {
                return None;
            }
            *at += len;
            Some((line[start..*at].parse().ok()?, (start, *at)))
        };
        skip(&mut at, &['*', '_', ' ', '\t']);
        let Some(done) = number(&mut at) else {
            continue;
        };
        skip(&mut at, &[' ', '\t']);
        if !lower[at..].starts_with("of") {
            continue;
        }
        at += 2;
        skip(&mut at, &[' ', '\t']);
        let Some(total) = number(&mut at) else {
            continue;
        };
        skip(&mut at, &[' ', '\t']);
        if lower[at..].starts_with("gate") {
            out.push((done, total));
        }
    }
    out
}

/// Whether a line opens or closes a fenced code block.
fn fence(line: &str) -> Option<&'static str> {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return None;
    }
    if t.starts_with("```") {
        Some("```")
    } else if t.starts_with("~~~") {
        Some("~~~")
    } else {
        None
    }
}

impl Record {
    /// Reads the task-list lines and rollout counts of a Markdown text,
    /// leaving out fenced code blocks.
    pub fn parse(text: &str) -> Record {
        let mut record = Record::default();
        let mut open: Option<&str> = None;
        for (n, (start, line)) in lines(text).enumerate() {
            let line_no = n as u32 + 1;
            match (open, fence(line)) {
                (None, Some(f)) => {
                    open = Some(f);
                    continue;
                }
                (Some(o), Some(f)) if o == f => {
                    open = None;
                    continue;
                }
                (Some(_), _) => continue,
                (None, None) => {}
            }
            if let Some((box_at, checked, text)) = task(line) {
                record.tasks.push(Task {
                    line: line_no,
                    text: text.to_owned(),
                    checked,
                    box_at: start + box_at,
                });
            }
            for ((done, d), (total, t)) in counts(line) {
                record.counts.push(Count {
                    line: line_no,
                    done,
                    total,
                    done_at: (start + d.0, start + d.1),
                    total_at: (start + t.0, start + t.1),
                });
            }
        }
        record
    }

    /// The task-list lines whose text is `text` (both trimmed).
    pub fn find<'r>(&'r self, text: &str) -> impl Iterator<Item = (usize, &'r Task)> {
        let text = text.trim().to_owned();
        self.tasks.iter().enumerate().filter(move |(_, t)| t.text == text)
    }

    /// The task-list line nearest to `text`, to suggest when a gate's text
    /// is not in the record.
    pub fn nearest(&self, text: &str) -> Option<&Task> {
        let want = text.trim().to_lowercase();
        self.tasks
            .iter()
            .map(|t| (strsim::normalized_levenshtein(&want, &t.text.to_lowercase()), t))
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.line.cmp(&a.1.line)))
            .map(|(_, t)| t)
    }

    /// `text` with the boxes of the tasks in `boxes` (task index, checked)
    /// and every rollout count set; every other byte unchanged. A checked
    /// box keeps its `X` or `x`.
    pub fn rewrite(&self, text: &str, boxes: &[(usize, bool)], done: usize, total: usize) -> String {
        let mut edits: Vec<(usize, usize, String)> = Vec::new();
        for &(i, checked) in boxes {
            let Some(t) = self.tasks.get(i) else { continue };
            if t.checked != checked {
                edits.push((t.box_at, t.box_at + 1, if checked { "x" } else { " " }.to_owned()));
            }
        }
        for c in &self.counts {
            if c.done != done {
                edits.push((c.done_at.0, c.done_at.1, done.to_string()));
            }
            if c.total != total {
                edits.push((c.total_at.0, c.total_at.1, total.to_string()));
            }
        }
        edits.sort_by_key(|e| e.0);
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end, with) in edits {
            out.push_str(&text[at..start]);
            out.push_str(&with);
            at = end;
        }
        out.push_str(&text[at..]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = "# ADR 007\n\nRollout: 1 of 3 gates\n\n## Rollout gates\n\n- [ ] Staging runs three nodes.\n- [x] Traefik uses Cluster.\n  * [X]   Indented, with spaces.  \n1. [ ] Numbered.\n\n```markdown\n- [ ] Not a gate: in a code block.\nRollout: 9 of 9 gates\n```\n- [] not a task\n- [ ]no space\n";

    #[test]
    fn reads_boxes_counts_and_skips_code_blocks() {
        let r = Record::parse(RECORD);
        let tasks: Vec<(u32, &str, bool)> = r.tasks.iter().map(|t| (t.line, t.text.as_str(), t.checked)).collect();
        assert_eq!(
            tasks,
            vec![
                (7, "Staging runs three nodes.", false),
                (8, "Traefik uses Cluster.", true),
                (9, "Indented, with spaces.", true),
                (10, "Numbered.", false),
            ]
        );
        assert_eq!(r.counts.len(), 1);
        assert_eq!((r.counts[0].line, r.counts[0].done, r.counts[0].total), (3, 1, 3));
    }

    #[test]
    fn rewriting_changes_only_the_boxes_and_the_numbers() {
        let r = Record::parse(RECORD);
        let out = r.rewrite(RECORD, &[(0, true), (1, false), (2, true), (3, false)], 2, 4);
        let before: Vec<&str> = RECORD.split('\n').collect();
        let after: Vec<&str> = out.split('\n').collect();
        assert_eq!(before.len(), after.len());
        for (i, (b, a)) in before.iter().zip(&after).enumerate() {
            match i + 1 {
                3 => assert_eq!(*a, "Rollout: 2 of 4 gates"),
                7 => assert_eq!(*a, "- [x] Staging runs three nodes."),
                8 => assert_eq!(*a, "- [ ] Traefik uses Cluster."),
                // Checked stays checked, with its capital X and trailing spaces.
                _ => assert_eq!(a, b, "line {}", i + 1),
            }
        }
        // Nothing to change: the same bytes.
        let same = r.rewrite(RECORD, &[(0, false), (1, true), (2, true), (3, false)], 1, 3);
        assert_eq!(same, RECORD);
    }

    #[test]
    fn crlf_records_keep_their_line_endings() {
        let text = "Rollout: 0 of 2 gates\r\n\r\n- [ ] One.\r\n- [ ] Two.\r\nlast line, no ending";
        let r = Record::parse(text);
        assert_eq!(r.tasks.len(), 2);
        assert_eq!(r.tasks[1].text, "Two.");
        let out = r.rewrite(text, &[(0, true), (1, false)], 1, 2);
        assert_eq!(
            out,
            "Rollout: 1 of 2 gates\r\n\r\n- [x] One.\r\n- [ ] Two.\r\nlast line, no ending"
        );
    }

    #[test]
    fn counts_take_emphasis_and_numbers_of_any_width() {
        let r = Record::parse("**Rollout:** 9 of 10 gates\n| Rollout: 0 of 1 gate |\nRollout: soon\n");
        let got: Vec<(usize, usize)> = r.counts.iter().map(|c| (c.done, c.total)).collect();
        assert_eq!(got, vec![(9, 10), (0, 1)]);
        let out = r.rewrite(
            "**Rollout:** 9 of 10 gates\n| Rollout: 0 of 1 gate |\nRollout: soon\n",
            &[],
            10,
            10,
        );
        assert_eq!(
            out,
            "**Rollout:** 10 of 10 gates\n| Rollout: 10 of 10 gate |\nRollout: soon\n"
        );
    }

    #[test]
    fn finds_gates_by_text_and_suggests_the_nearest_line() {
        let r = Record::parse(RECORD);
        assert_eq!(
            r.find("  Traefik uses Cluster. ").map(|(i, _)| i).collect::<Vec<_>>(),
            vec![1]
        );
        assert_eq!(r.find("Traefik uses Local.").count(), 0);
        assert_eq!(r.nearest("Staging runs 3 nodes").map(|t| t.line), Some(7));
        assert_eq!(Record::parse("no tasks\n").nearest("x"), None);
    }
}
