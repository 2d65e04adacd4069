package main

import (
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/gridbed/gridbed/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// defaultMetricsAddr is where gridbed run serves /metrics unless told.
const defaultMetricsAddr = "127.0.0.1:9464"

// loopbackAddr reads a listen address: "off" or "" is none, a bare port
// ("6060" or ":6060") means that port on the loopback interface.
func loopbackAddr(addr string) string {
	switch {
	case addr == "off" || addr == "":
		return ""
	case !strings.Contains(addr, ":"):
		return "127.0.0.1:" + addr
	case strings.HasPrefix(addr, ":"):
		return "127.0.0.1" + addr
	}
	return addr
}

// endpoints are a run's HTTP listeners: /metrics, and the profiler only
// when asked.
type endpoints struct{ servers []*metrics.Server }

func (e *endpoints) Close() {
	for _, s := range e.servers {
		s.Close()
	}
}

// serveEndpoints starts /metrics on metricsAddr and the profiler on
// pprofAddr ("" or "off": none). An address the user gave that is busy is
// an error (Prometheus would scrape another run); only the default metrics
// address falls back to a free port, and says where. The profiler shares
// the metrics listener only when the user names the same address for both.
func serveEndpoints(cmd string, reg *prometheus.Registry, metricsAddr string, metricsGiven bool, pprofAddr string, stderr io.Writer) (*endpoints, error) {
	e := &endpoints{}
	maddr, paddr := loopbackAddr(metricsAddr), loopbackAddr(pprofAddr)
	shared := paddr != "" && paddr == maddr
	if maddr != "" {
		serve := metrics.Serve
		if shared {
			serve = metrics.ServeProfiler
		}
		srv, err := serve(maddr, reg)
		if err != nil && metricsGiven {
			return nil, fmt.Errorf("gridbed %s: cannot serve metrics on --metrics-addr %s: %v — choose a free address (e.g. --metrics-addr 127.0.0.1:0 for any free port) or --metrics-addr off", cmd, metricsAddr, err)
		}
		busy := err != nil
		if busy {
			srv, err = serve("127.0.0.1:0", reg)
			if err != nil {
				return nil, fmt.Errorf("gridbed %s: cannot serve metrics: %v", cmd, err)
			}
		}
		e.servers = append(e.servers, srv)
		target, terr := srv.TargetFile()
		if busy {
			// Loud: a Prometheus pointed at the default port scrapes
			// another process, not this run.
			fmt.Fprintf(stderr, "gridbed: ***** the default metrics port %s is busy (another gridbed run?) *****\n", maddr)
			fmt.Fprintf(stderr, "gridbed: ***** this run serves its metrics on http://%s/metrics instead *****\n", srv.Addr())
			switch {
			case target != "":
				fmt.Fprintf(stderr, "gridbed: Prometheus with grafana/prometheus.yml finds it through %s (file_sd_configs); by hand: curl -s http://%s/metrics, or add the target %s\n", target, srv.Addr(), srv.Addr())
			default:
				fmt.Fprintf(stderr, "gridbed: point Prometheus at %s (curl -s http://%s/metrics), or give every run its own port with --metrics-addr\n", srv.Addr(), srv.Addr())
			}
		}
		fmt.Fprintf(stderr, "metrics: http://%s/metrics\n", srv.Addr())
		if terr != nil {
			fmt.Fprintf(stderr, "gridbed: could not write the Prometheus target file (%v): file-discovery Prometheus will not find this run; set %s to a writable directory\n", terr, metrics.TargetsDirEnv)
		}
		if shared {
			fmt.Fprintf(stderr, "profiler: http://%s/debug/pprof/\n", srv.Addr())
		}
	}
	if paddr != "" && !shared {
		srv, err := metrics.ServeProfiler(paddr, nil)
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("gridbed %s: cannot serve the profiler on --pprof-addr %s: %v — choose a free address", cmd, pprofAddr, err)
		}
		e.servers = append(e.servers, srv)
		fmt.Fprintf(stderr, "profiler: http://%s/debug/pprof/\n", srv.Addr())
		if host, _, err := net.SplitHostPort(srv.Addr()); err == nil {
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				fmt.Fprintf(stderr, "gridbed: the profiler on %s is reachable from other hosts: it shows the command line and memory of this process\n", srv.Addr())
			}
		}
	}
	return e, nil
}
