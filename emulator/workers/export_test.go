package workers

import "context"

// WorkStartingLate is Work whose start command waits for hold(index,
// delivered) to return first (delivered is the worker's bus's delivered
// count): a worker the machine kept from starting while the others ran.
func WorkStartingLate(ctx context.Context, url string, opts WorkerOptions, hold func(index int, delivered func() uint64)) error {
	return work(ctx, url, opts, hold)
}
