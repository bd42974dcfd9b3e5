PRAGMA user_version = 1;
CREATE TABLE runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, stack TEXT NOT NULL, started_at TEXT NOT NULL, duration_s REAL NOT NULL, thresholds_version TEXT NOT NULL, ok INTEGER NOT NULL, recorded_at TEXT NOT NULL);
CREATE TABLE results (run_seq INTEGER NOT NULL REFERENCES runs(seq), cluster TEXT NOT NULL, pool TEXT NOT NULL, node TEXT NOT NULL, accelerator TEXT NOT NULL, device TEXT NOT NULL, probe TEXT NOT NULL, tier INTEGER NOT NULL, unit TEXT NOT NULL, measured REAL, expected REAL, floor REAL, verdict TEXT NOT NULL);
INSERT INTO runs VALUES (1, 'r1', 'cluster', 'example', '2026-11-20T00:00:00+00:00', 90.5, 't1', 1, '2026-11-20T00:02:00+00:00');
INSERT INTO runs VALUES (2, 'r2', 'cluster', 'example', '2026-11-21T00:00:00+00:00', 91.0, 't1', 0, '2026-11-21T00:02:00+00:00');
INSERT INTO results VALUES (1, 'ml-gke', 'h100-train', 'node-a', 'a3-highgpu-8g', 'cuda0', 'matmul_tflops', 2, 'TFLOP/s', 801.5, 989.0, 593.4, 'pass');
INSERT INTO results VALUES (1, 'ml-gke', 'h100-train', 'node-a', 'a3-highgpu-8g', 'cuda0', 'memory_gbps', 2, 'GB/s', 2900.0, 3350.0, 2345.0, 'pass');
INSERT INTO results VALUES (2, 'ml-gke', 'h100-train', 'node-a', 'a3-highgpu-8g', 'cuda0', 'matmul_tflops', 2, 'TFLOP/s', 650.0, 989.0, 593.4, 'warn');
INSERT INTO results VALUES (2, 'ml-gke', 'h100-train', 'node-a', 'a3-highgpu-8g', 'cuda0', 'memory_gbps', 2, 'GB/s', 2890.0, 3350.0, 2345.0, 'pass');
