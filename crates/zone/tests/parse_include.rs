//! `$INCLUDE` reads files relative to the including file and refuses loops.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::Path;

use bulwark_proto::Name;
use bulwark_zone::parse_file;

fn data(file: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(file)
}

#[test]
fn include_loop_is_reported_where_the_second_include_is() {
    let origin: Name = "loop.test.".parse().unwrap();
    let problems = parse_file(&data("include-loop.zone"), &origin).unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:?}");
    let p = &problems[0];
    assert!(p.file.ends_with("tests/data/loop-b.inc"), "{p}");
    assert_eq!((p.line, p.column), (3, 11), "{p}");
    assert!(
        p.message.starts_with("$INCLUDE loop: ")
            && p.message.ends_with("loop-a.inc is already being read"),
        "{p}"
    );
}

#[test]
fn included_file_with_origin_and_nested_origin_change() {
    let origin: Name = "example.com.".parse().unwrap();
    let records = parse_file(&data("everything.zone"), &origin).unwrap();
    let owners: Vec<String> = records
        .iter()
        .map(|r| r.owner.to_string())
        .filter(|o| o.ends_with("sub.example.com.") || o.starts_with("after-include"))
        .collect();
    assert_eq!(
        owners,
        vec![
            "sub.example.com.",
            "sub.example.com.",
            "www.sub.example.com.",
            "deeper.sub.example.com.",
            "after-include.example.com.",
        ]
    );
}

#[test]
fn missing_include_file_is_reported_at_the_directive() {
    let dir = std::env::temp_dir().join(format!("bulwark-include-missing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let zone = dir.join("z.zone");
    std::fs::write(
        &zone,
        "$TTL 1\n@ SOA ns hm 1 2 3 4 5\n  $INCLUDE nope.inc\n$INCLUDE nope.inc\n",
    )
    .unwrap();
    let origin: Name = "example.com.".parse().unwrap();
    let problems = parse_file(&zone, &origin).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    // A directive must start its line: indented, `$INCLUDE` is read as a type.
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert_eq!((problems[0].line, problems[0].column), (3, 3));
    assert_eq!(
        problems[0].message,
        "expected a TTL, a class or a type, found \"$INCLUDE\" (a directive must start its line)"
    );
    assert_eq!((problems[1].line, problems[1].column), (4, 10));
    assert!(
        problems[1].message.starts_with("cannot read "),
        "{}",
        problems[1]
    );
}
