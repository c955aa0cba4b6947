//! `--match` on key names read from a file: the glob of `SCAN MATCH`
//! (Redis `stringmatchlen`, case-sensitive): `*`, `?`, `[abc]`, `[^a]`,
//! `[a-z]`, `\x`, on bytes. The glob crates match paths or UTF-8 text
//! with other rules for `[^` and `\`, and keys are any bytes.

/// Whether `key` matches `pattern`.
pub fn matches(pattern: &[u8], key: &[u8]) -> bool {
    let (mut p, mut k) = (0, 0);
    // After a `*`: where the pattern goes on, and the key byte it was tried at.
    let mut star: Option<(usize, usize)> = None;
    loop {
        if p < pattern.len() {
            if pattern[p] == b'*' {
                star = Some((p + 1, k));
                p += 1;
                continue;
            }
            if k < key.len() {
                if let Some(width) = one(&pattern[p..], key[k]) {
                    p += width;
                    k += 1;
                    continue;
                }
            }
        } else if k == key.len() {
            return true;
        }
        // Mismatch: let the last `*` take one more byte, if any is left.
        match star {
            Some((sp, sk)) if sk < key.len() => {
                star = Some((sp, sk + 1));
                p = sp;
                k = sk + 1;
            }
            _ => return false,
        }
    }
}

/// Whether the pattern's first element (not `*`) matches byte `b`: the
/// element's length if it does.
fn one(pattern: &[u8], b: u8) -> Option<usize> {
    match pattern.first()? {
        b'?' => Some(1),
        b'\\' if pattern.len() >= 2 => (pattern[1] == b).then_some(2),
        b'[' => class(pattern, b),
        &c => (c == b).then_some(1),
    }
}

/// A `[...]` class at the start of `pattern`; unterminated, it runs to the
/// end of the pattern (as in Redis).
fn class(pattern: &[u8], b: u8) -> Option<usize> {
    let mut i = 1;
    let not = pattern.get(i) == Some(&b'^');
    if not {
        i += 1;
    }
    let mut hit = false;
    loop {
        match pattern.get(i) {
            None => {
                // Redis steps back onto the last byte: the class ends there.
                i -= 1;
                break;
            }
            Some(b']') => break,
            Some(b'\\') if i + 1 < pattern.len() => {
                hit |= pattern[i + 1] == b;
                i += 2;
            }
            Some(&lo) if pattern.get(i + 1) == Some(&b'-') && i + 2 < pattern.len() => {
                let hi = pattern[i + 2];
                let (lo, hi) = if lo > hi { (hi, lo) } else { (lo, hi) };
                hit |= (lo..=hi).contains(&b);
                i += 3;
            }
            Some(&c) => {
                hit |= c == b;
                i += 1;
            }
        }
    }
    (hit != not).then_some(i + 1)
}

#[cfg(test)]
mod tests {
    use super::matches;

    fn m(p: &str, k: &str) -> bool {
        matches(p.as_bytes(), k.as_bytes())
    }

    #[test]
    fn globs_of_scan_match() {
        assert!(m("*", "") && m("*", "anything"));
        assert!(m("bf:*", "bf:1") && !m("bf:*", "cf:1"));
        assert!(m("h?llo", "hello") && !m("h?llo", "hllo"));
        assert!(m("h[ae]llo", "hallo") && !m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo") && !m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo") && m("h[b-a]llo", "hallo") && !m("h[a-b]llo", "hcllo"));
        assert!(m("a\\*b", "a*b") && !m("a\\*b", "axb"));
        assert!(m("*:td", "x:y:td") && !m("*:td", "x:y:tdx"));
        assert!(m("a*b*c", "abbbc") && m("a*b*c", "abcbc") && !m("a*b*c", "acb"));
        assert!(m("[\\]]", "]") && !m("[]", "]"));
        assert!(!m("abc", "ab") && !m("ab", "abc") && m("", ""));
        assert!(matches(b"k\xff*", b"k\xff\x00"));
        // Many stars: no blow-up.
        let long = "a".repeat(5000);
        assert!(!m(&"*a".repeat(200).replace("*a*a", "*a*b"), &long));
    }
}
