//! The names of the files values come from, each kept once per process.
//!
//! Every parsed node carries the file it came from. A shared string there
//! made each origin 32 bytes and every copy of a node an atomic count on
//! its file's name; a number makes it 16 bytes and a plain copy. A name is
//! kept until the process ends: there is one per file read, and a run reads
//! each file once.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

/// A file's name, made once per distinct name; it reads as the name.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileName(u32);

/// The first chunk's size; chunk `c` holds `FIRST << c` names, so 27 chunks
/// hold every `u32`.
const FIRST: u32 = 64;
const CHUNKS: usize = 27;

type Chunk = Box<[OnceLock<&'static str>]>;

struct Names {
    ids: Mutex<HashMap<&'static str, u32>>,
    /// Names by number, read without a lock: a chunk is made once and never
    /// moves, and each slot is set once, before its number is given out.
    chunks: [OnceLock<Chunk>; CHUNKS],
}

fn names() -> &'static Names {
    static NAMES: OnceLock<Names> = OnceLock::new();
    NAMES.get_or_init(|| Names {
        ids: Mutex::new(HashMap::new()),
        chunks: std::array::from_fn(|_| OnceLock::new()),
    })
}

/// The chunk and the slot in it of name number `id`.
fn slot(id: u32) -> (usize, usize) {
    let n = u64::from(id) / u64::from(FIRST) + 1;
    let chunk = n.ilog2();
    let start = u64::from(FIRST) * ((1u64 << chunk) - 1);
    (chunk as usize, (u64::from(id) - start) as usize)
}

impl FileName {
    pub fn new(name: &str) -> FileName {
        let names = names();
        let mut ids = names.ids.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = ids.get(name) {
            return FileName(id);
        }
        // More than four billion distinct names cannot be read in one run
        // within the input limits; the last number is shared past that.
        let id = u32::try_from(ids.len()).unwrap_or(u32::MAX);
        let kept: &'static str = Box::leak(name.to_owned().into_boxed_str());
        let (chunk, at) = slot(id);
        let slots = names.chunks[chunk].get_or_init(|| (0..FIRST << chunk).map(|_| OnceLock::new()).collect());
        let _ = slots[at].set(kept);
        ids.insert(kept, id);
        FileName(id)
    }

    pub fn as_str(&self) -> &'static str {
        let (chunk, at) = slot(self.0);
        names().chunks[chunk]
            .get()
            .and_then(|slots| slots[at].get())
            .copied()
            .unwrap_or_default()
    }
}

impl std::ops::Deref for FileName {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for FileName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

/// By the name, so that what is sorted by origin keeps the files' order.
impl Ord for FileName {
    fn cmp(&self, other: &Self) -> Ordering {
        if self.0 == other.0 {
            return Ordering::Equal;
        }
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for FileName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for FileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for FileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl From<&str> for FileName {
    fn from(name: &str) -> Self {
        FileName::new(name)
    }
}

impl From<String> for FileName {
    fn from(name: String) -> Self {
        FileName::new(&name)
    }
}

impl From<&Arc<str>> for FileName {
    fn from(name: &Arc<str>) -> Self {
        FileName::new(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_kept_once_and_reads_back() {
        let a = FileName::new("gitops/platform/a/values.yaml");
        let b = FileName::from(String::from("gitops/platform/a/values.yaml"));
        assert_eq!(a, b);
        assert_eq!(&*a, "gitops/platform/a/values.yaml");
        assert_ne!(a, FileName::new("gitops/platform/b/values.yaml"));
        assert_eq!(FileName::new("").as_str(), "");
    }

    #[test]
    fn names_sort_by_their_text_not_their_order() {
        let z = FileName::new("order-test/z.yaml");
        let a = FileName::new("order-test/a.yaml");
        assert!(a < z);
        assert_eq!(format!("{a}"), "order-test/a.yaml");
    }

    #[test]
    fn slots_cover_each_number_once() {
        let mut seen = std::collections::HashSet::new();
        for id in (0..5000).chain([u32::MAX - 1, u32::MAX]) {
            let (chunk, at) = slot(id);
            assert!(chunk < CHUNKS, "{id}");
            assert!((at as u64) < u64::from(FIRST) << chunk, "{id}");
            assert!(seen.insert((chunk, at)), "{id}");
        }
        assert_eq!(slot(0), (0, 0));
        assert_eq!(slot(FIRST), (1, 0));
    }

    #[test]
    fn names_made_on_many_threads_agree() {
        let ids: Vec<Vec<FileName>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..300).map(|i| FileName::new(&format!("threads/{i}.yaml"))).collect()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for names in &ids[1..] {
            assert_eq!(names, &ids[0]);
        }
        for (i, n) in ids[0].iter().enumerate() {
            assert_eq!(n.as_str(), format!("threads/{i}.yaml"));
        }
    }
}
