//! The file-system primitives of the writer, each written so that a hostile
//! tree cannot make strata follow a link, open a pipe, read a huge file whole
//! or lose a copy: look at a path without following links, open only regular
//! files, compare and hash by streaming, swap folders, remove our own copies.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read, Seek, Write};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};

/// `sha256:<hex>` of some bytes.
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

/// Bytes (a digest) as lowercase hex, as every digest strata writes.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    s
}

/// Writes `bytes` to `path` atomically: a temp file beside it, then a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    // The folders above are checked by `world::ensure_state_dir`; this one
    // must be a real folder too, not a link planted to send the write away.
    super::real_dir(dir).map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Replaces a user's file with `bytes` atomically: a temporary file in the
/// same folder, with the file's permissions, renamed over it.
pub fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(".strata-tmp-").tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    if let Ok(meta) = std::fs::metadata(path) {
        tmp.as_file().set_permissions(meta.permissions())?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The SHA-256 of some bytes, in hex, as the manifest records it.
pub fn hash(content: &[u8]) -> String {
    hex(&Sha256::digest(content))
}

/// What is at a path inside the output folder, seen without following links.
pub enum Entry {
    Absent,
    /// A parent of the path is not a folder (a file, a link, a pipe): the
    /// relative path of that parent.
    Blocked(String),
    Dir,
    File(fs::Metadata),
    /// A symbolic link, pipe, socket or device: never opened.
    Other,
}

/// What a non-regular, non-folder entry is, in words.
pub fn kind(ft: fs::FileType) -> &'static str {
    if ft.is_symlink() {
        return "a symbolic link";
    }
    if ft.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a named pipe";
        }
        if ft.is_socket() {
            return "a socket";
        }
        if ft.is_block_device() || ft.is_char_device() {
            return "a device";
        }
    }
    if ft.is_file() { "a file" } else { "a special file" }
}

/// The folders under one root already looked at, so that a path's parents
/// are checked once per render, not once per file: each is a real folder
/// (`true`), or not there (`false`, and so neither is anything below it —
/// a render into a new folder looks at its top once, not at every file).
#[derive(Default)]
pub struct Dirs {
    seen: Mutex<HashMap<String, bool, foldhash::fast::RandomState>>,
}

impl Dirs {
    /// Looks at `rel` (a checked `/`-separated relative path) under `base`,
    /// checking that no parent is a link or anything but a folder.
    pub fn probe(&self, base: &Path, rel: &str) -> io::Result<Entry> {
        let mut end = 0;
        while let Some(i) = rel[end..].find('/') {
            end += i;
            let parent = &rel[..end];
            end += 1;
            let known = self.seen.lock().unwrap_or_else(|e| e.into_inner()).get(parent).copied();
            match known {
                Some(true) => continue,
                Some(false) => return Ok(Entry::Absent),
                None => {}
            }
            let found = match fs::symlink_metadata(base.join(parent)) {
                Ok(m) if m.is_dir() => true,
                Ok(_) => return Ok(Entry::Blocked(parent.to_owned())),
                Err(e) if e.kind() == io::ErrorKind::NotFound => false,
                Err(e) => return Err(e),
            };
            self.seen
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(parent.to_owned(), found);
            if !found {
                return Ok(Entry::Absent);
            }
        }
        match fs::symlink_metadata(base.join(rel)) {
            Ok(m) if m.is_dir() => Ok(Entry::Dir),
            Ok(m) if m.is_file() => Ok(Entry::File(m)),
            Ok(_) => Ok(Entry::Other),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Entry::Absent),
            Err(e) => Err(e),
        }
    }
}

/// Opens a file for reading only if it is a regular file: never through a
/// final symbolic link, and never blocking on a pipe.
pub fn open_regular(path: &Path) -> io::Result<fs::File> {
    open_regular_with_len(path).map(|(file, _)| file)
}

/// [`open_regular`], with the file's length when it was opened.
fn open_regular_with_len(path: &Path) -> io::Result<(fs::File, u64)> {
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    #[cfg(not(target_os = "linux"))]
    {
        let m = fs::symlink_metadata(path)?;
        if !m.is_file() {
            return Err(not_regular(m.file_type()));
        }
    }
    let file = opts.open(path).map_err(|e| through_link(path, e))?;
    let m = file.metadata()?;
    if !m.is_file() {
        return Err(not_regular(m.file_type()));
    }
    Ok((file, m.len()))
}

/// An open refused because the path is a symbolic link (`O_NOFOLLOW`
/// gives `ELOOP`, "too many levels of symbolic links") is named as what it
/// is, with where it leads.
fn through_link(path: &Path, e: io::Error) -> io::Error {
    #[cfg(target_os = "linux")]
    if e.raw_os_error() == Some(libc::ELOOP) && fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        let to = fs::read_link(path).map_or_else(|_| "somewhere".to_owned(), |t| t.display().to_string());
        let leads = match fs::canonicalize(path) {
            Ok(real) => format!(" ({})", real.display()),
            Err(_) => " (which does not exist)".to_owned(),
        };
        return io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "it is a symbolic link to {to}{leads}, and strata reads no file through a link, which could lead out of the repository"
            ),
        );
    }
    let _ = path;
    e
}

fn not_regular(ft: fs::FileType) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file but {}", kind(ft)),
    )
}

const CHUNK: usize = 64 * 1024;

/// How a file on disk compares with the bytes strata wants there.
pub struct Compared {
    pub equal: bool,
    /// The hash of the file on disk, when asked for and the file differs.
    pub hash: Option<String>,
}

/// Compares the regular file at `path` (of length `len` when looked at) with
/// `wanted`, by streaming: a different size costs no read, an equal file one
/// read and no hashing. With `want_hash`, a differing file is hashed too.
pub fn compare(path: &Path, len: u64, wanted: &[u8], want_hash: bool) -> io::Result<Compared> {
    if len != wanted.len() as u64 {
        let hash = if want_hash { Some(hash_file(path)?) } else { None };
        return Ok(Compared { equal: false, hash });
    }
    let mut file = open_regular(path)?;
    // One byte more than wanted tells a longer file (the size was looked at
    // before opening); most files are far smaller than a chunk, and a
    // chunk's zeroing cost more than reading them.
    let mut buf = vec![0u8; CHUNK.min(wanted.len() + 1)];
    let mut at = 0usize;
    loop {
        let n = read_some(&mut file, &mut buf)?;
        if n == 0 {
            if at == wanted.len() {
                return Ok(Compared {
                    equal: true,
                    hash: None,
                });
            }
            break;
        }
        if wanted.get(at..at + n) != Some(&buf[..n]) {
            break;
        }
        at += n;
    }
    // They differ after the first `at` bytes, which are the same as
    // `wanted`'s; hash on from there.
    if !want_hash {
        return Ok(Compared {
            equal: false,
            hash: None,
        });
    }
    file.seek(io::SeekFrom::Start(at as u64))?;
    let mut hasher = Sha256::new();
    hasher.update(&wanted[..at]);
    loop {
        let n = read_some(&mut file, &mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(Compared {
        equal: false,
        hash: Some(hex(&hasher.finalize())),
    })
}

fn read_some(file: &mut fs::File, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match file.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// The hash of a regular file, read in chunks.
pub fn hash_file(path: &Path) -> io::Result<String> {
    let mut file = open_regular(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = read_some(&mut file, &mut buf)?;
        if n == 0 {
            return Ok(hex(&hasher.finalize()));
        }
        hasher.update(&buf[..n]);
    }
}

/// Reads `file` to its end, but never more than one byte past `limit` (so
/// the caller can tell it is over), into room for `len` bytes, its length
/// when last seen. Read through `take`, which gives no size hint, the
/// buffer would start at 32 bytes and cost a read at each doubling.
pub fn read_to_limit(file: fs::File, len: u64, limit: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(usize::try_from(len.min(limit)).unwrap_or(0).saturating_add(1));
    file.take(limit + 1).read_to_end(&mut out)?;
    Ok(out)
}

/// Reads a regular file of at most `limit` bytes.
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let (file, len) = open_regular_with_len(path)?;
    let out = read_to_limit(file, len, limit)?;
    if out.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {} MiB", limit >> 20),
        ));
    }
    Ok(out)
}

/// Removes a folder strata made (a staging or old copy), whatever the
/// permissions of the folders inside it: a copy of a tree with a read-only
/// folder must not get stuck. A missing folder is fine.
pub fn remove_tree(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
        Ok(m) if !m.is_dir() => return fs::remove_file(path),
        Ok(_) => {}
    }
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(_) => {
            for entry in walkdir::WalkDir::new(path).follow_links(false).into_iter().flatten() {
                if entry.file_type().is_dir() {
                    let _ = make_writable(entry.path());
                }
            }
            fs::remove_dir_all(path)
        }
    }
}

#[cfg(unix)]
fn make_writable(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::symlink_metadata(dir)?.permissions().mode();
    fs::set_permissions(dir, fs::Permissions::from_mode(mode | 0o700))
}

#[cfg(not(unix))]
fn make_writable(dir: &Path) -> io::Result<()> {
    let mut perms = fs::symlink_metadata(dir)?.permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    fs::set_permissions(dir, perms)
}

#[cfg(unix)]
pub fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
pub fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    fs::copy(target, link).map(|_| ())
}

pub fn sync_dir(dir: &Path) {
    if let Ok(f) = fs::File::open(dir) {
        let _ = f.sync_all();
    }
}

/// Whether the atomic exchange may be used. `STRATA_TEST_NO_EXCHANGE=1`
/// turns it off so that tests can reach the two-rename swap and its crash
/// recovery on Linux; it is for tests only, read once, here.
#[allow(clippy::disallowed_methods)]
fn exchange_allowed() -> bool {
    static ALLOWED: OnceLock<bool> = OnceLock::new();
    *ALLOWED.get_or_init(|| std::env::var_os("STRATA_TEST_NO_EXCHANGE").is_none_or(|v| v != "1"))
}

/// Swaps two folders atomically (Linux `renameat2(RENAME_EXCHANGE)`), where
/// the system and file system offer it.
pub fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    if !exchange_allowed() {
        return Err(io::Error::new(io::ErrorKind::Unsupported, "exchange turned off"));
    }
    renameat2_exchange(a, b)
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn renameat2_exchange(a: &Path, b: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let ca = CString::new(a.as_os_str().as_bytes())?;
    let cb = CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: both pointers are valid NUL-terminated strings for the duration
    // of the call; the syscall reads them and keeps no reference.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn renameat2_exchange(_a: &Path, _b: &Path) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "no atomic exchange"))
}

/// An exclusive lock on a tree, held while writing it; released when the
/// process ends, however it ends.
pub struct Lock {
    _file: fs::File,
}

pub enum LockError {
    Busy,
    Io(io::Error),
}

impl Lock {
    /// Takes the lock at `path` (never through a symbolic link), waiting up
    /// to a minute for another writer.
    pub fn acquire(path: &Path) -> Result<Lock, LockError> {
        let mut opts = fs::OpenOptions::new();
        opts.create(true).truncate(false).write(true);
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        }
        let file = opts.open(path).map_err(LockError::Io)?;
        let m = file.metadata().map_err(LockError::Io)?;
        if !m.is_file() {
            return Err(LockError::Io(not_regular(m.file_type())));
        }
        for _ in 0..600 {
            match file.try_lock() {
                Ok(()) => return Ok(Lock { _file: file }),
                Err(fs::TryLockError::WouldBlock) => std::thread::sleep(std::time::Duration::from_millis(100)),
                Err(fs::TryLockError::Error(e)) => return Err(LockError::Io(e)),
            }
        }
        Err(LockError::Busy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_link_is_named_as_a_link_with_where_it_leads() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside.yaml");
        fs::write(&outside, "a: 1\n").unwrap();
        let repo = tmp.path().join("repo");
        fs::create_dir(&repo).unwrap();
        let link = repo.join("values.yaml");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let e = read_regular(&link, 1024).unwrap_err().to_string();
        assert!(e.contains(&format!("a symbolic link to {}", outside.display())), "{e}");
        assert!(e.contains("out of the repository") && !e.contains("levels"), "{e}");
        std::os::unix::fs::symlink(repo.join("gone"), repo.join("dangling.yaml")).unwrap();
        let e = read_regular(&repo.join("dangling.yaml"), 1024).unwrap_err().to_string();
        assert!(e.contains("which does not exist"), "{e}");
    }

    #[test]
    fn compare_and_hash_agree_with_a_whole_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let big: Vec<u8> = (0..(3 * CHUNK + 17)).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &big).unwrap();
        let len = big.len() as u64;
        let same = compare(&p, len, &big, true).unwrap();
        assert!(same.equal && same.hash.is_none());
        for at in [0, 5, CHUNK, 2 * CHUNK + 3, big.len() - 1] {
            let mut other = big.clone();
            other[at] ^= 1;
            let c = compare(&p, len, &other, true).unwrap();
            assert!(!c.equal, "{at}");
            assert_eq!(c.hash.as_deref(), Some(hash(&big).as_str()), "{at}");
        }
        let shorter = compare(&p, len, &big[..10], true).unwrap();
        assert_eq!(shorter.hash, Some(hash(&big)));
        assert_eq!(hash_file(&p).unwrap(), hash(&big));
    }

    #[test]
    fn a_file_that_grew_after_its_size_was_taken_is_not_equal() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        // Small and large files: the buffer is sized by the wanted bytes.
        for size in [1, 700, CHUNK - 1, CHUNK, 2 * CHUNK + 5] {
            let wanted: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            let mut grown = wanted.clone();
            grown.extend_from_slice(b"more");
            std::fs::write(&p, &grown).unwrap();
            let c = compare(&p, wanted.len() as u64, &wanted, true).unwrap();
            assert!(!c.equal, "{size}");
            assert_eq!(c.hash, Some(hash(&grown)), "{size}");
            std::fs::write(&p, &wanted).unwrap();
            assert!(compare(&p, wanted.len() as u64, &wanted, true).unwrap().equal, "{size}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn links_and_pipes_are_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real"), "x").unwrap();
        symlink(&dir.path().join("real"), &dir.path().join("link")).unwrap();
        assert!(open_regular(&dir.path().join("link")).is_err());
        let dirs = Dirs::default();
        assert!(matches!(dirs.probe(dir.path(), "link").unwrap(), Entry::Other));
        assert!(matches!(
            dirs.probe(dir.path(), "real/below").unwrap(),
            Entry::Blocked(p) if p == "real"
        ));
        assert!(matches!(dirs.probe(dir.path(), "none/below").unwrap(), Entry::Absent));
        // A missing folder is remembered, and all below it is absent.
        assert!(matches!(
            dirs.probe(dir.path(), "none/deeper/file").unwrap(),
            Entry::Absent
        ));
        assert!(matches!(dirs.probe(dir.path(), "none").unwrap(), Entry::Absent));
    }
}
