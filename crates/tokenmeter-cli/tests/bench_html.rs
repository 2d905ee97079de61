//! The HTML report opens in headless Chromium and the screenshot shows the charts drawn.
//!
//! Needs Debian's `chromium` (`apt-get install -y chromium`); the test fails, naming the
//! install command, when it is missing.

#[path = "bench_support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{bench, temp_dir, text};

/// Series colours of the report (crates/tokenmeter-bench/src/output/charts.rs).
const TTFT: [u8; 3] = [31, 119, 180];
const TPOT: [u8; 3] = [255, 127, 14];
const E2E: [u8; 3] = [44, 160, 44];
const ITL: [u8; 3] = [148, 103, 189];
const IN_FLIGHT: [u8; 3] = [214, 39, 40];
const GOODPUT: [u8; 3] = [140, 86, 75];
const ATTAINMENT: [u8; 3] = [227, 119, 194];
const SWEEP_GOODPUT: [u8; 3] = [188, 189, 34];

fn chromium() -> PathBuf {
    for candidate in [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ] {
        if Path::new(candidate).exists() {
            return PathBuf::from(candidate);
        }
    }
    panic!(
        "headless Chromium is needed for the HTML screenshot test and was not found at \
         /usr/bin/chromium; install it with `apt-get install -y chromium`"
    );
}

/// Screenshots `html` at 1200×2000 and returns RGB rows.
fn screenshot(html: &Path, dir: &Path) -> (usize, usize, Vec<u8>) {
    let png = dir.join("shot.png");
    let profile = dir.join("chromium-profile");
    let output = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1200,2000")
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs");
    assert!(
        png.exists(),
        "chromium wrote no screenshot: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let channels = info.color_type.samples();
    assert!(
        channels >= 3,
        "unexpected PNG colour type {:?}",
        info.color_type
    );
    let (w, h) = (info.width as usize, info.height as usize);
    let mut rgb = Vec::with_capacity(w * h * 3);
    for px in buf[..w * h * channels].chunks(channels) {
        rgb.extend_from_slice(&px[..3]);
    }
    (w, h, rgb)
}

/// Pixels within a small distance of `colour`, and the vertical span they cover.
fn find(rgb: &[u8], width: usize, colour: [u8; 3]) -> (usize, usize, usize) {
    let (mut n, mut top, mut bottom) = (0, usize::MAX, 0);
    for (i, px) in rgb.chunks(3).enumerate() {
        let near = px.iter().zip(colour).all(|(&a, b)| a.abs_diff(b) <= 12);
        if near {
            n += 1;
            top = top.min(i / width);
            bottom = bottom.max(i / width);
        }
    }
    (n, top, bottom)
}

fn assert_drawn(rgb: &[u8], width: usize, colour: [u8; 3], name: &str) {
    let (n, top, bottom) = find(rgb, width, colour);
    assert!(
        n >= 150,
        "the {name} chart is not drawn: {n} pixels of its colour"
    );
    assert!(
        bottom > top + 20,
        "the {name} series is flat or a dot ({top}..{bottom})"
    );
}

/// A series that may be a horizontal line (an attainment of 100% at every rate).
fn assert_line(rgb: &[u8], width: usize, colour: [u8; 3], name: &str) {
    let (n, _, _) = find(rgb, width, colour);
    assert!(
        n >= 150,
        "the {name} chart is not drawn: {n} pixels of its colour"
    );
}

#[test]
fn the_report_shows_every_chart() {
    let dir = temp_dir("html");
    let html = dir.join("report.html");
    let output = bench(&[
        "-n",
        "40",
        "--rate",
        "30",
        "--output-tokens",
        "16..64",
        "--html",
        html.to_str().unwrap(),
        "--no-progress",
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.matches("<svg").count() >= 6, "six inline charts");
    assert!(
        !page.contains("<script") && !page.contains("src=\"http"),
        "self-contained"
    );
    let (w, h, rgb) = screenshot(&html, &dir);
    assert_eq!((w, h), (1200, 2000));
    for (colour, name) in [
        (TTFT, "TTFT CDF"),
        (TPOT, "TPOT CDF"),
        (E2E, "E2E CDF"),
        (ITL, "ITL histogram"),
        (IN_FLIGHT, "in-flight"),
        (GOODPUT, "goodput over time"),
    ] {
        assert_drawn(&rgb, w, colour, name);
    }
}

#[test]
fn the_sweep_report_shows_the_attainment_curve() {
    let dir = temp_dir("html-sweep");
    let html = dir.join("sweep.html");
    let trace = dir.join("sweep.jsonl");
    // 8 requests a step, run three times over when its attainment's interval straddles the
    // target: at most 24, still too few for a steady state.
    let output = bench(&[
        "-n",
        "8",
        "--sweep-rates",
        "4,16",
        "--output-tokens",
        "16",
        "--html",
        html.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "--no-progress",
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    // An extended step's later requests go on numbering: (rate, id) names one line.
    let lines = std::fs::read_to_string(&trace).unwrap();
    let keys: Vec<(String, u64)> = lines
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|t| (t["rate"].to_string(), t["id"].as_u64().unwrap()))
        .collect();
    let unique: std::collections::BTreeSet<&(String, u64)> = keys.iter().collect();
    assert_eq!(unique.len(), keys.len(), "a (rate, id) twice in the trace");
    assert!(
        keys.len() > 16,
        "the steps were extended: {} lines",
        keys.len()
    );
    assert!(
        stdout.contains("capacity at 90% attainment (the target)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("too few for a steady state"),
        "at most 24 requests a step"
    );
    let (w, _, rgb) = screenshot(&html, &dir);
    assert_line(&rgb, w, ATTAINMENT, "sweep attainment");
    assert_drawn(&rgb, w, SWEEP_GOODPUT, "sweep goodput");
    assert_drawn(&rgb, w, TTFT, "TTFT CDF of the best rate");
}

/// `bench compare --html`: two runs' traces compared, the page shows both sides' CDFs (base
/// in the TTFT blue, new in the in-flight red) and the differences chart. Needs the
/// statistics of `bench compare` (the bootstrap and verdicts).
#[test]
fn the_compare_page_overlays_both_runs() {
    let dir = temp_dir("html-compare");
    let (base, new, html) = (
        dir.join("base.jsonl"),
        dir.join("new.jsonl"),
        dir.join("compare.html"),
    );
    for trace in [&base, &new] {
        let output = bench(&[
            "-n",
            "60",
            "--rate",
            "60",
            "--output-tokens",
            "16..64",
            "--trace",
            trace.to_str().unwrap(),
            "--no-progress",
        ]);
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{stdout}\n{stderr}");
    }
    let output = support::tokenmeter()
        .args(["bench", "compare"])
        .args([&base, &new])
        .arg("--html")
        .arg(&html)
        .output()
        .expect("tokenmeter bench compare runs");
    let (stdout, stderr) = text(&output);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{stdout}\n{stderr}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("class=\"differences\""),
        "the differences chart"
    );
    assert!(!page.contains("<script") && !page.contains("src=\"http"));
    let (w, _, rgb) = screenshot(&html, &dir);
    assert_drawn(&rgb, w, TTFT, "base side's CDFs");
    assert_drawn(&rgb, w, IN_FLIGHT, "new side's CDFs");
}
