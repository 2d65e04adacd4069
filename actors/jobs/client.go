package jobs

import (
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// ClientConfig holds a client's parameters.
type ClientConfig struct {
	// Timeout is how long the client waits without word about a job
	// (status from its owner, or its result) before it resubmits it
	// (003 §4.1: if owner and run node both fail, the client resubmits).
	Timeout time.Duration
	// MaxAttempts is how many submissions of one job the client makes
	// before it records the job failed.
	MaxAttempts int
}

// Injector picks the injection node for a submission: a current member of
// the overlay (the DHT's "external mechanism", 003 §4.1), 0 if none.
type Injector func() core.NodeID

type clientJob struct {
	spec      *wire.JobSpec
	lastWord  time.Duration
	ended     bool
	gotResult bool // a JobResult arrived (a second one means the job ran twice)
}

// Client submits jobs and waits for their outcome. Every job it submits
// ends exactly once on its side: with a result, or failed with a reason.
type Client struct {
	id      core.NodeID
	cfg     ClientConfig
	inject  Injector
	jobs    map[uint64]*clientJob
	open    []uint64 // ids of jobs not ended, in submission order
	ticking bool
	ready   Ready
}

// NewClient creates the client at bus address id.
func NewClient(id core.NodeID, cfg ClientConfig, inject Injector) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 5
	}
	return &Client{id: id, cfg: cfg, inject: inject, jobs: map[uint64]*clientJob{}}
}

// ID is the client's bus address.
func (c *Client) ID() core.NodeID { return c.id }

// Ready returns what the client wants done since the last Advance.
func (c *Client) Ready() Ready { return c.ready }

// Advance tells the client that the caller is done with what Ready
// returned: the client clears it and reuses its slices.
func (c *Client) Advance() { c.ready.advance() }

func (c *Client) event(e Event) {
	e.Peer = c.id
	c.ready.Events = append(c.ready.Events, e)
}

// Submit hands a new job to an injection node. spec.Id must be unique and
// non-zero; Client and Attempt are filled in.
func (c *Client) Submit(now time.Duration, spec *wire.JobSpec) {
	spec.Client = uint64(c.id)
	spec.Attempt = 1
	spec.SubmittedAt = int64(now)
	j := &clientJob{spec: spec, lastWord: now}
	c.jobs[spec.Id] = j
	c.open = append(c.open, spec.Id)
	c.submit(now, j)
	if !c.ticking {
		c.ticking = true
		c.ready.SetTimer(core.TimerClient, now+c.cfg.Timeout/4)
	}
}

func (c *Client) submit(now time.Duration, j *clientJob) {
	c.event(Event{Kind: EvSubmitted, Job: j.spec.Id, Attempt: j.spec.Attempt})
	to := c.inject()
	if to == 0 {
		return // no member yet: the timeout resubmits it
	}
	c.ready.Send(to, &wire.JobSubmit{Job: proto.Clone(j.spec).(*wire.JobSpec)})
}

// Step handles a message to the client.
func (c *Client) Step(now time.Duration, from core.NodeID, m proto.Message) {
	if m == nil || !m.ProtoReflect().IsValid() {
		return
	}
	switch m := m.(type) {
	case *wire.JobResult:
		c.result(now, m.Id, m.Attempt, core.NodeID(m.Run))
	case *wire.JobStatus:
		for _, id := range m.Owned {
			if j, ok := c.jobs[id]; ok {
				j.lastWord = now
			}
		}
		for _, id := range m.Done {
			c.result(now, id, 0, from)
		}
		for _, f := range m.Failed {
			if j, ok := c.jobs[f.Id]; ok && !j.ended {
				c.end(j)
				c.event(Event{Kind: EvFailed, Job: f.Id, Attempt: j.spec.Attempt, Other: from, Reason: f.Reason})
			}
		}
	}
}

// result records a job's outcome (attempt 0: the owner's "done" status):
// the first ends it; a second JobResult (the job ran twice) is a
// duplicate. A status saying "done" before or after the result is the
// same outcome, not a duplicate.
func (c *Client) result(now time.Duration, id uint64, attempt uint32, from core.NodeID) {
	j, ok := c.jobs[id]
	if !ok {
		return
	}
	second := attempt != 0 && j.gotResult
	if attempt != 0 {
		j.gotResult = true
	}
	if !j.ended {
		c.end(j)
		c.event(Event{Kind: EvResult, Job: id, Attempt: j.spec.Attempt, Other: from})
		return
	}
	if second {
		c.event(Event{Kind: EvDuplicateResult, Job: id, Attempt: attempt, Other: from})
	}
}

func (c *Client) end(j *clientJob) {
	j.ended = true
	if i := slices.Index(c.open, j.spec.Id); i >= 0 {
		c.open = slices.Delete(c.open, i, i+1)
	}
}

// Tick resubmits every open job the client heard nothing about for its
// timeout, or fails it after MaxAttempts submissions.
func (c *Client) Tick(now time.Duration, kind core.TimerKind) {
	if kind != core.TimerClient {
		return
	}
	if len(c.open) == 0 {
		c.ticking = false // Submit arms it again
		return
	}
	for _, id := range slices.Clone(c.open) {
		j := c.jobs[id]
		if now-j.lastWord < c.cfg.Timeout {
			continue
		}
		if int(j.spec.Attempt) >= c.cfg.MaxAttempts {
			c.end(j)
			c.event(Event{Kind: EvFailed, Job: id, Attempt: j.spec.Attempt, Reason: ReasonGaveUp})
			continue
		}
		j.spec.Attempt++
		j.lastWord = now
		c.event(Event{Kind: EvResubmitted, Job: id, Attempt: j.spec.Attempt})
		c.submit(now, j)
	}
	c.ready.SetTimer(core.TimerClient, now+c.cfg.Timeout/4)
}

// Open is the number of jobs submitted and not ended.
func (c *Client) Open() int { return len(c.open) }

// OpenIDs lists the jobs submitted and not ended, in submission order.
func (c *Client) OpenIDs() []uint64 { return slices.Clone(c.open) }
