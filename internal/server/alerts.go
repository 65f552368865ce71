package server

import (
	"context"
	"sync"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/worker"
)

// runAlertWorkers evaluates the time-based alert triggers every minute and
// delivers the alert outbox until ctx ends. NEW_ENDPOINT is raised by the
// enrollment itself.
func (s *Server) runAlertWorkers(ctx context.Context) {
	var mailer *worker.Mailer
	if s.cfg.SMTP.Addr != "" {
		mailer = &worker.Mailer{Addr: s.cfg.SMTP.Addr, User: s.cfg.SMTP.User, Password: s.cfg.SMTP.Password, From: s.cfg.SMTP.From, TLS: s.cfg.SMTP.TLS}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		(&worker.AlertEvaluator{Store: s.store, DisconnectedAfter: 3 * s.cfg.CheckinInterval}).Run(ctx)
	})
	wg.Go(func() {
		(&worker.AlertDeliverer{Store: s.store, Holder: "replica-" + store.NewID(), Mailer: mailer,
			AllowPrivate: s.cfg.AllowPrivateWebhooks, WebhookTLS: s.cfg.WebhookTLS,
			Claim: s.cfg.AlertClaim}).Run(ctx)
	})
	wg.Wait()
}
