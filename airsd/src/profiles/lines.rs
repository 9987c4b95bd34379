//! Lines of a command's output as it streams, for the readers that look for what
//! tools print (test summaries, compiler findings): chunks in, each whole line out as
//! text, in bounded memory (a line past the cap is read by its start), with no copy
//! when a line lies whole in one chunk.

/// One stream's reader.
pub struct Lines {
    cap: usize,
    buf: Vec<u8>,
    overflow: bool,
}

impl Lines {
    /// Lines are read by their first `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            buf: Vec::new(),
            overflow: false,
        }
    }

    /// Feeds a chunk; `each` gets every line it completes.
    pub fn push(&mut self, data: &[u8], mut each: impl FnMut(&str)) {
        let mut rest = data;
        while let Some(n) = memchr::memchr(b'\n', rest) {
            let line = &rest[..n];
            if self.buf.is_empty() && !self.overflow {
                text(&line[..line.len().min(self.cap)], &mut each);
            } else {
                self.extend(line);
                text(&self.buf, &mut each);
                self.buf.clear();
            }
            self.overflow = false;
            rest = &rest[n + 1..];
        }
        self.extend(rest);
    }

    /// The last line, if the output did not end with a newline.
    pub fn finish(&mut self, mut each: impl FnMut(&str)) {
        if !self.buf.is_empty() {
            text(&self.buf, &mut each);
            self.buf.clear();
        }
        self.overflow = false;
    }

    fn extend(&mut self, data: &[u8]) {
        if self.overflow {
            return;
        }
        let room = self.cap.saturating_sub(self.buf.len());
        self.buf.extend_from_slice(&data[..data.len().min(room)]);
        self.overflow = data.len() > room;
    }
}

fn text(bytes: &[u8], each: &mut impl FnMut(&str)) {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => each(s),
        Err(_) => each(&String::from_utf8_lossy(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_whole_across_chunks_and_long_ones_by_their_start() {
        let mut got = Vec::new();
        let mut l = Lines::new(8);
        for chunk in [&b"ab"[..], b"c\nde", b"f\r\n0123456789abc\nlast"] {
            l.push(chunk, |s| got.push(s.to_string()));
        }
        l.finish(|s| got.push(s.to_string()));
        assert_eq!(got, ["abc", "def", "01234567", "last"]);
    }
}
