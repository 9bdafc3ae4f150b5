// Package metrics is the service's Prometheus collector: what GET
// /metrics serves (see Collector for the series). cmd/trellis makes one
// and hands its methods to whoever reports: the run service (it is a
// runs.Metrics), the tool provider's breakers and cognition; package api
// counts requests, streams and refused authentications into it and
// serves it. Nothing below api imports it: they report through their
// own interfaces and callbacks.
package metrics
