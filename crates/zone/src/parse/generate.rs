//! BIND's `$GENERATE start-stop[/step] lhs [ttl] [class] type rhs` directive: the
//! range and the `$` substitutions in its owner and data templates.
//!
//! In a template, `$` is the iterator; `${offset}`, `${offset,width}` and
//! `${offset,width,base}` add an offset and pad to a width in base `d`, `o`, `x`,
//! `X`, or `n`/`N` (nibbles, least significant first, separated by dots, as for
//! reverse IPv6 names; the width counts the dots). `\$` and `$$` are a literal `$`.
//! Every other escape is kept for the field that receives the text.

/// The most records one `$GENERATE` may produce, so that a typo such as
/// `1-4000000000` cannot exhaust memory.
pub const MAX_GENERATED: u64 = 65_536;

/// The widest a `${…}` substitution may be padded.
const MAX_WIDTH: usize = 255;

/// A parsed `start-stop[/step]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub start: u32,
    pub stop: u32,
    pub step: u32,
}

impl Range {
    /// The iterator values, in order.
    pub fn values(self) -> impl Iterator<Item = u32> {
        let Range { start, stop, step } = self;
        let step = usize::try_from(step).unwrap_or(usize::MAX).max(1);
        (start..=stop).step_by(step)
    }
}

fn number(text: &[u8]) -> Option<u32> {
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    core::str::from_utf8(text).ok()?.parse().ok()
}

/// Parses `start-stop[/step]`; start must not exceed stop and step must be positive.
pub fn parse_range(text: &[u8]) -> Result<Range, String> {
    let bad = || {
        format!(
            "bad $GENERATE range \"{}\": expected start-stop or start-stop/step",
            String::from_utf8_lossy(text)
        )
    };
    let (range, step) = match text.iter().position(|&b| b == b'/') {
        Some(i) => (
            text.get(..i).unwrap_or(&[]),
            number(text.get(i.saturating_add(1)..).unwrap_or(&[])).ok_or_else(bad)?,
        ),
        None => (text, 1),
    };
    let dash = range.iter().position(|&b| b == b'-').ok_or_else(bad)?;
    let start = number(range.get(..dash).unwrap_or(&[])).ok_or_else(bad)?;
    let stop = number(range.get(dash.saturating_add(1)..).unwrap_or(&[])).ok_or_else(bad)?;
    if start > stop {
        return Err(format!(
            "$GENERATE range starts at {start}, after its end {stop}"
        ));
    }
    if step == 0 {
        return Err("$GENERATE step must be at least 1".to_owned());
    }
    let count = u64::from(stop.saturating_sub(start))
        .checked_div(u64::from(step))
        .unwrap_or(0)
        .saturating_add(1);
    if count > MAX_GENERATED {
        return Err(format!(
            "$GENERATE would make {count} records, more than {MAX_GENERATED}"
        ));
    }
    Ok(Range { start, stop, step })
}

/// One `${offset,width,base}` modifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Modifier {
    offset: i64,
    width: usize,
    base: u8,
}

fn parse_modifier(body: &[u8]) -> Result<Modifier, String> {
    let text = core::str::from_utf8(body).map_err(|_| "bad ${…} modifier".to_owned())?;
    let bad =
        || format!("bad $GENERATE modifier \"${{{text}}}\": expected ${{offset[,width[,base]]}}");
    let mut parts = text.split(',');
    let offset = parts
        .next()
        .filter(|s| !s.is_empty())
        .ok_or_else(bad)?
        .parse::<i64>()
        .map_err(|_| bad())?;
    let width = match parts.next() {
        Some(w) => w.parse::<usize>().map_err(|_| bad())?,
        None => 0,
    };
    if width > MAX_WIDTH {
        return Err(format!("$GENERATE width {width} is above {MAX_WIDTH}"));
    }
    let base = match parts.next() {
        Some(b) => match b.as_bytes() {
            [c @ (b'd' | b'o' | b'x' | b'X' | b'n' | b'N')] => *c,
            _ => return Err(bad()),
        },
        None => b'd',
    };
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok(Modifier {
        offset,
        width,
        base,
    })
}

/// Nibble form: hex digits from least significant, each followed by a dot, until
/// the value is used up and the text is at least `width` long (BIND's `n`/`N`).
fn nibbles(mut value: u64, width: usize, upper: bool) -> String {
    let digits: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut out = String::new();
    loop {
        let d = digits
            .get(usize::try_from(value & 0xf).unwrap_or(0))
            .copied()
            .unwrap_or(b'0');
        out.push(char::from(d));
        value >>= 4;
        if value == 0 && out.len() >= width {
            break;
        }
        out.push('.');
        if value == 0 && out.len() >= width {
            break;
        }
    }
    out
}

fn render(value: u32, m: Modifier) -> Result<String, String> {
    let v = i64::from(value)
        .checked_add(m.offset)
        .ok_or_else(|| "$GENERATE offset overflows".to_owned())?;
    let w = m.width;
    if m.base == b'd' {
        return Ok(format!("{v:0w$}"));
    }
    let u = u64::try_from(v).map_err(|_| {
        format!(
            "$GENERATE value {v} is negative, which base {} cannot show",
            char::from(m.base)
        )
    })?;
    Ok(match m.base {
        b'o' => format!("{u:0w$o}"),
        b'x' => format!("{u:0w$x}"),
        b'X' => format!("{u:0w$X}"),
        b'n' => nibbles(u, w, false),
        _ => nibbles(u, w, true),
    })
}

/// Substitutes `value` into a template.
pub fn expand(template: &[u8], value: u32) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(template.len().saturating_add(8));
    let mut i = 0usize;
    while let Some(&b) = template.get(i) {
        i = i.saturating_add(1);
        match b {
            b'\\' => match template.get(i) {
                Some(b'$') => {
                    out.push(b'$');
                    i = i.saturating_add(1);
                }
                Some(&next) => {
                    out.extend_from_slice(&[b'\\', next]);
                    i = i.saturating_add(1);
                }
                None => out.push(b'\\'),
            },
            b'$' => match template.get(i) {
                Some(b'$') => {
                    out.push(b'$');
                    i = i.saturating_add(1);
                }
                Some(b'{') => {
                    let body_start = i.saturating_add(1);
                    let close = template
                        .get(body_start..)
                        .and_then(|rest| rest.iter().position(|&c| c == b'}'))
                        .ok_or_else(|| "$GENERATE modifier \"${\" not closed by '}'".to_owned())?;
                    let body_end = body_start.saturating_add(close);
                    let m = parse_modifier(template.get(body_start..body_end).unwrap_or(&[]))?;
                    out.extend_from_slice(render(value, m)?.as_bytes());
                    i = body_end.saturating_add(1);
                }
                _ => out.extend_from_slice(value.to_string().as_bytes()),
            },
            _ => out.push(b),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ex(t: &str, v: u32) -> String {
        String::from_utf8(expand(t.as_bytes(), v).unwrap()).unwrap()
    }

    #[test]
    fn ranges_with_and_without_step() {
        let r = parse_range(b"0-17/5").unwrap();
        assert_eq!(r.values().collect::<Vec<_>>(), vec![0, 5, 10, 15]);
        let r = parse_range(b"3-3").unwrap();
        assert_eq!(r.values().collect::<Vec<_>>(), vec![3]);
        assert!(parse_range(b"5-1").is_err());
        assert!(parse_range(b"1-5/0").is_err());
        assert!(parse_range(b"1-").is_err());
        assert!(parse_range(b"a-b").is_err());
        assert!(parse_range(b"-1-5").is_err());
        assert!(parse_range(b"0-4000000000").is_err());
        assert!(parse_range(b"0-65535").is_ok());
    }

    // Expected texts are what BIND 9.18's named-compilezone produced for them.
    #[test]
    fn dollar_and_modifiers_match_bind() {
        assert_eq!(ex("host$", 7), "host7");
        assert_eq!(ex("g${1,3}", 1), "g002");
        assert_eq!(ex("y${1}", 1), "y2");
        assert_eq!(ex("x${0,0,X}", 26), "x1A");
        assert_eq!(ex("${0,2,o}", 1), "01");
        assert_eq!(ex("${0,4,x}", 255), "00ff");
        assert_eq!(ex("h${-10,3}b", 5), "h-05b");
        assert_eq!(ex("h${0,3}b", 5), "h005b");
    }

    #[test]
    fn nibble_modifier_counts_dots_in_its_width() {
        assert_eq!(ex("n${0,4,n}", 0), "n0.0.");
        assert_eq!(ex("N${-1,6,N}", 26), "N9.1.0.");
        assert_eq!(ex("a${0,3,n}b", 300), "ac.2.1b");
        assert_eq!(ex("c${0,0,n}b", 300), "cc.2.1b");
        assert_eq!(ex("e${0,8,n}b", 300), "ec.2.1.0.b");
        assert_eq!(ex("f${0,7,n}b", 300), "fc.2.1.0b");
    }

    #[test]
    fn escaped_and_doubled_dollars_are_literal_other_escapes_kept() {
        assert_eq!(ex("a$ \\$ $$", 1), "a1 $ $");
        assert_eq!(ex("a\\.b$", 2), "a\\.b2");
        assert_eq!(ex("\\\\$", 3), "\\\\3");
    }

    #[test]
    fn bad_modifiers_are_errors() {
        assert!(expand(b"${0,3,z}", 1).is_err());
        assert!(expand(b"${0,3", 1).is_err());
        assert!(expand(b"${}", 1).is_err());
        assert!(expand(b"${a}", 1).is_err());
        assert!(expand(b"${0,1,d,4}", 1).is_err());
        assert!(expand(b"${-5,0,x}", 1).is_err());
        assert!(expand(b"${0,999}", 1).is_err());
    }
}
