//! Small operations on text that every crate needs the same way.

/// The largest char boundary of `s` at or before `at` (the whole length when `at`
/// is past it): where a string may be cut to at most `at` bytes.
pub fn floor_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cut_never_splits_a_character() {
        let s = "aé€b";
        assert_eq!(super::floor_boundary(s, 2), 1);
        assert_eq!(super::floor_boundary(s, 3), 3);
        assert_eq!(super::floor_boundary(s, 5), 3);
        assert_eq!(super::floor_boundary(s, 6), 6);
        assert_eq!(super::floor_boundary(s, 99), s.len());
    }
}
