// Package bench holds the renderer's benchmarks, side by side in one run:
// ytt's library called directly, the renderer in-process and through its
// worker pool, and a fresh ytt CLI process. It has no code of its own; see
// bench_test.go and the README's "Benchmarks" section.
package bench
