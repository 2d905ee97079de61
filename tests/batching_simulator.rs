//! The batch-size trade-off read back from the simulator's own steps, in paused time: the
//! analysis reproduces the cost model's table and recommends the largest batch that meets a TPOT
//! target; a different cost model changes the recommendation.

use std::time::Duration;

use futures_util::StreamExt;
use tokenmeter::{Clock, Meter};
use tokenmeter_sim::{CostModel, Engine, GenerateRequest, SimConfig};
use tokenmeter_slo::batching::{BatchAnalysis, BatchTable};

/// Runs `n` requests at once for each `n` in `batches` and returns the table of decode steps.
async fn observe(cost: CostModel, batches: &[u32]) -> BatchTable {
    let analysis = BatchAnalysis::new();
    let meter = Meter::builder()
        .clock(Clock::tokio())
        .sink(analysis.clone())
        .build();
    // The engine records its steps through the meter (`Meter::steps`) on its own.
    let engine = Engine::builder()
        .meter(meter)
        .config(SimConfig::default().max_batch(64).cost(cost).seed(3))
        .build()
        .expect("engine");
    for &n in batches {
        let streams: Vec<_> = (0..n)
            .map(|_| {
                engine
                    .submit(GenerateRequest::chat(16, 40))
                    .expect("admitted")
            })
            .collect();
        futures_util::future::join_all(streams.into_iter().map(StreamExt::count)).await;
    }
    analysis.table()
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= want * 0.01
}

#[tokio::test(start_paused = true)]
async fn the_analysis_reproduces_the_simulator_table() {
    let table = observe(CostModel::default(), &[1, 8, 20, 21, 32, 48, 49, 64]).await;
    println!("{table}");
    // batch → TPOT, tokens/s per user, tokens/s per GPU (the simulator's default cost model:
    // an 8B model on one H100).
    for (batch, ms, per_user, per_gpu) in [
        (1, 7.0, 143.0, 143.0),
        (8, 8.0, 125.0, 1_000.0),
        (32, 12.0, 83.3, 2_667.0),
        (64, 18.0, 55.6, 3_556.0),
    ] {
        let row = table
            .row(batch)
            .unwrap_or_else(|| panic!("batch {batch} observed in\n{table}"));
        assert!(row.steps >= 30, "batch {batch}: {} decode steps", row.steps);
        assert!(
            close(row.tpot_p50 * 1e3, ms),
            "batch {batch}: TPOT {} ms",
            row.tpot_p50 * 1e3
        );
        assert!(
            close(row.tpot_p95 * 1e3, ms),
            "batch {batch}: TPOT p95 {} ms",
            row.tpot_p95 * 1e3
        );
        assert!(
            close(row.tokens_per_second_per_user, per_user),
            "batch {batch}: {row:?}"
        );
        assert!(
            close(row.tokens_per_second_per_gpu, per_gpu),
            "batch {batch}: {row:?}"
        );
    }
    // 20 → 10 ms and 48 → 15 ms exactly on the interpolated table: inclusive targets.
    assert_eq!(table.recommend(Duration::from_millis(10)), Some(20));
    assert_eq!(table.recommend(Duration::from_millis(15)), Some(48));
    assert_eq!(table.recommend(Duration::from_millis(50)), Some(64));
    assert_eq!(
        table.recommend(Duration::from_millis(5)),
        None,
        "no batch is that fast"
    );
}

#[tokio::test(start_paused = true)]
async fn a_slower_model_changes_the_recommendation() {
    let slower = CostModel::new(
        [
            (1, Duration::from_millis(10)),
            (16, Duration::from_millis(25)),
            (64, Duration::from_millis(61)),
        ],
        Duration::from_millis(3),
        Duration::from_micros(50),
    )
    .expect("cost model");
    let table = observe(slower, &[1, 16, 49, 50, 64]).await;
    println!("{table}");
    // 25 + (b − 16) × 36/48 ms ≤ 50 ms ⇔ b ≤ 49.3: 49 → 49.75 ms, 50 → 50.5 ms.
    assert_eq!(table.recommend(Duration::from_millis(50)), Some(49));
    assert_eq!(table.recommend(Duration::from_millis(15)), Some(1));
    let default = observe(CostModel::default(), &[1, 16, 49, 50, 64]).await;
    assert_eq!(default.recommend(Duration::from_millis(50)), Some(64));
}
