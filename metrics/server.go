package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server serves /metrics from a private registry and, only when asked,
// Go's profiler under /debug/pprof/ (never on the default mux).
type Server struct {
	srv *http.Server
	ln  net.Listener
	// target is the Prometheus target file the server wrote (Advertise),
	// removed when it closes; "" none. targetErr says why none was
	// written when one should have been.
	target    string
	targetErr error
}

// Serve starts serving /metrics of reg on addr (e.g. "127.0.0.1:9464";
// port 0 picks a free one). It returns once the listener is bound.
func Serve(addr string, reg *prometheus.Registry) (*Server, error) {
	return serve(addr, reg, false)
}

// ServeProfiler starts serving Go's profiler under /debug/pprof/ on addr,
// and /metrics of reg too when reg is not nil (one listener for both when
// the user named the same address for them). The profiler reveals the
// command line and memory of the process and can slow it down: serve it
// only where the user asked for it.
func ServeProfiler(addr string, reg *prometheus.Registry) (*Server, error) {
	return serve(addr, reg, true)
}

func serve(addr string, reg *prometheus.Registry, profiler bool) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	if reg != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	}
	if profiler {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go func() { _ = s.srv.Serve(ln) }()
	if role := advertising(); role != "" && reg != nil {
		if dir := TargetsDir(); dir != "" {
			s.target, s.targetErr = writeTarget(dir, s.Addr(), role)
		}
	}
	return s, nil
}

// TargetFile is the Prometheus target file the server wrote (Advertise):
// its path, or "" and why not (nil when not advertising).
func (s *Server) TargetFile() (string, error) { return s.target, s.targetErr }

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server and removes its target file.
func (s *Server) Close() error {
	if s.target != "" {
		os.Remove(s.target)
		s.target = ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
