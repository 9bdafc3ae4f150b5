// Package turnbench is the harness of the benchmarks that measure one
// more turn on a conversation that already has n turns, on each
// checkpoint backend: graph's BenchmarkTurn (the engine alone) and
// nodes' BenchmarkAgentTurn (the agent) build their template thread and
// time their turns through it, so that the two measure alike. Its
// Savers, the three checkpoint backends fresh, also serve nodes' history
// tests. CPU and ReportCPU give benchmarks of turns their CPU time a
// turn (cpu-ms/turn), the figure the README's scale section reports.
package turnbench
