package assembly

import (
	"context"

	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/jobs"
	"github.com/xpromo/xpromo/server/storage"
)

// jobRunner builds the job runner on the server's clock. Build registers
// the vetting gate's and the scoring job's handlers on it (registerGate,
// registerScoring).
func jobRunner(cfg Config, store storage.Store) *jobs.Runner[storage.Tx] {
	holder := cfg.Instance
	if holder == "" {
		holder = ids.New("run") // no instance id: any id unique to this runner
	}
	return &jobs.Runner[storage.Tx]{
		Update:      store.Update,
		Now:         cfg.Now,
		Holder:      holder,
		Concurrency: cfg.JobConcurrency,
		Log:         cfg.Logger.With("component", "jobs"),
	}
}

// RunJobs runs the job queue until ctx ends (jobs.Runner.Run): it claims
// due jobs of the kinds with a handler, every cfg.JobInterval
// (jobs.DefaultInterval if 0) and whenever a job finishes, and on the way
// out hands back the jobs it was running. Every instance runs it; claims
// never overlap.
func (s *Server) RunJobs(ctx context.Context) {
	s.Jobs.Run(ctx, s.cfg.JobInterval)
}
