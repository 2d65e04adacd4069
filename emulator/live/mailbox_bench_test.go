package live

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/peer"
)

// countEndpoint counts what is delivered and says when want arrived.
type countEndpoint struct {
	n    *atomic.Int64
	want int64
	done chan struct{}
}

func (c countEndpoint) Deliver([]byte) {
	if c.n.Add(1) == c.want {
		close(c.done)
	}
}
func (countEndpoint) Fire(core.TimerKind, time.Duration) {}

// channelMailbox is the least a mailbox can be: a buffered channel and
// one goroutine handing each message to the actor.
type channelMailbox struct{ ch chan any }

func newChannelMailbox(a *peer.Actor) channelMailbox {
	m := channelMailbox{ch: make(chan any, 1024)}
	go func() {
		for msg := range m.ch {
			a.Handle(msg)
		}
	}()
	return m
}

// BenchmarkMailbox is the cost of handing a bus message to an actor and
// running it there (peer.Actor.Handle, an endpoint that only counts): on
// protoactor-go's mailbox and dispatcher, as the emulator driver runs its
// peers (runtimeActor), against a buffered channel and a goroutine per
// actor. One goroutine sends b.N messages round-robin over the actors and
// waits for the last; ns/op is per message, the whole path (send, queue,
// wake-up, dispatch, Handle). The difference is what the runtime costs
// beyond the least a mailbox can do (docs/BENCHMARKS.md).
func BenchmarkMailbox(b *testing.B) {
	for _, actors := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("runtime=protoactor/actors=%d", actors), func(b *testing.B) {
			system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
			defer system.Shutdown()
			var n atomic.Int64
			done := make(chan struct{})
			pids := make([]*actor.PID, actors)
			for i := range pids {
				a := &peer.Actor{Endpoint: countEndpoint{n: &n, want: int64(b.N), done: done}}
				pids[i] = system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return runtimeActor{a} }))
			}
			msg := &peer.Inbound{Data: []byte("x")}
			b.ResetTimer()
			for i := range b.N {
				system.Root.Send(pids[i%actors], msg)
			}
			<-done
		})
		b.Run(fmt.Sprintf("runtime=channel/actors=%d", actors), func(b *testing.B) {
			var n atomic.Int64
			done := make(chan struct{})
			boxes := make([]channelMailbox, actors)
			for i := range boxes {
				boxes[i] = newChannelMailbox(&peer.Actor{Endpoint: countEndpoint{n: &n, want: int64(b.N), done: done}})
			}
			defer func() {
				for _, m := range boxes {
					close(m.ch)
				}
			}()
			msg := &peer.Inbound{Data: []byte("x")}
			b.ResetTimer()
			for i := range b.N {
				boxes[i%actors].ch <- msg
			}
			<-done
		})
	}
}
