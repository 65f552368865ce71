package server

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patchd/patchd/internal/endpointq"
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
	deliveries := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "patchd_alert_deliveries_total",
		Help: "Alert delivery attempts of this replica by channel (email, webhook) and outcome (sent, retry: failed and queued again, failed: failed for good)."},
		[]string{"channel", "outcome"})
	for _, ch := range []string{store.ChannelEmail, store.ChannelWebhook} {
		for _, o := range []string{worker.ResultSent, worker.ResultRetry, worker.ResultFailed} {
			deliveries.WithLabelValues(ch, o)
		}
	}
	if err := s.registry.Register(deliveries); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			deliveries = already.ExistingCollector.(*prometheus.CounterVec)
		} else {
			slog.Warn("alert delivery metrics", "err", err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		(&worker.AlertEvaluator{Store: s.store, DisconnectedAfter: endpointq.DisconnectedAfter(s.cfg.CheckinInterval)}).Run(ctx)
	})
	wg.Go(func() {
		(&worker.AlertDeliverer{Store: s.store, Holder: s.replica, Mailer: mailer, EmailRetry: s.cfg.SMTP.Retry,
			AllowPrivate: s.cfg.AllowPrivateWebhooks, WebhookTLS: s.cfg.WebhookTLS,
			Claim: s.cfg.AlertClaim, Counted: func(channel, outcome string) { deliveries.WithLabelValues(channel, outcome).Inc() }}).Run(ctx)
	})
	wg.Wait()
}
