// Package grafana holds gridbed's Grafana dashboards (dashboards/*.json),
// their provisioning files and a compose file that starts Prometheus and
// Grafana next to a run (README.md in this directory).
//
// The package has no Go API; its tests keep the dashboards honest. One
// parses every PromQL expression of every panel and annotation and checks
// each metric and label against the registry a real run builds; the other
// scrapes a short emulator run with a real Prometheus and fails on any
// panel whose query returns nothing (docs/OBSERVABILITY.md).
package grafana
