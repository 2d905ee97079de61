//! Helpers shared by the integration tests: a canonical form of the exposition, a tiny HTTP
//! client, external binaries, and a real Prometheus server.
#![allow(dead_code)]

pub(crate) mod listener;
pub(crate) mod server;
pub(crate) mod workload;

#[allow(unused_imports)] // each test binary uses a different part
pub(crate) use tokenmeter_tests::{free_port, http, prometheus, promtool_check, sample};

/// The exposition with its families sorted by name and, inside a family, its series sorted by
/// labels (bucket lines keep their order): `metrics-exporter-prometheus` renders from hash
/// maps, so the raw order changes between runs.
pub(crate) fn canonical(text: &str) -> String {
    let mut families: Vec<(String, Vec<String>)> = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let lines: Vec<&str> = block.lines().collect();
        let name = lines
            .iter()
            .find_map(|l| l.strip_prefix("# TYPE "))
            .and_then(|l| l.split(' ').next())
            .unwrap_or_default()
            .to_owned();
        let (mut header, mut samples): (Vec<&str>, Vec<&str>) =
            lines.into_iter().partition(|l| l.starts_with('#'));
        samples.sort_by_key(|line| series_key(line));
        header.append(&mut samples);
        let lora = name.ends_with("lora_requests_info");
        let lines = header
            .into_iter()
            .map(|line| {
                if lora {
                    wall_clock(line)
                } else {
                    line.to_owned()
                }
            })
            .collect();
        families.push((name, lines));
    }
    families.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = String::new();
    for (_, lines) in families {
        for line in lines {
            out.push_str(&line);
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

/// A LoRA info sample whose value is the wall-clock time of its last change (not 0) with that
/// value written `UNIX_TIME`, so the text does not depend on when it was rendered.
fn wall_clock(line: &str) -> String {
    match line.rsplit_once(' ') {
        Some((series, value)) if !line.starts_with('#') && value != "0" => {
            format!("{series} UNIX_TIME")
        }
        _ => line.to_owned(),
    }
}

/// A sample line's labels without `le`: the series a bucket, sum or count line belongs to.
fn series_key(line: &str) -> String {
    let Some((open, close)) = line.find('{').zip(line.rfind('}')) else {
        return String::new();
    };
    line[open + 1..close]
        .split("\",")
        .filter(|pair| !pair.starts_with("le="))
        .collect::<Vec<_>>()
        .join("\",")
}
