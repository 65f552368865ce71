package worker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"strings"
	"sync"
	"time"

	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/reports"
	"github.com/patchd/patchd/internal/store"
)

// AlertEvaluator raises the events of the time-based alert triggers
// (ENDPOINT_OFFLINE, GROUP_UPTIME, REBOOT_REQUIRED, MISSING_CRITICAL_UPDATE,
// CRITICAL_VULN, REPORT_ROWS) every Interval. Replicas may all run it: the
// store raises each condition once.
type AlertEvaluator struct {
	Store *store.Store
	// Interval between passes (default one minute); the first pass runs
	// one interval after Run starts.
	Interval time.Duration
	// DisconnectedAfter is how long an unseen endpoint takes to count as
	// disconnected (three check-in intervals).
	DisconnectedAfter time.Duration
	// Now is the clock (tests move it); nil is time.Now.
	Now func() time.Time
	// CountReport counts a report's rows for REPORT_ROWS; nil counts the
	// rows of the report catalog, exactly as GET /api/v1/reports shows them.
	CountReport store.ReportCounter
}

// Run evaluates every Interval until ctx ends.
func (e *AlertEvaluator) Run(ctx context.Context) {
	every := e.Interval
	if every <= 0 {
		every = time.Minute
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := e.EvaluateOnce(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("alert evaluation", "err", err)
		}
	}
}

// EvaluateOnce runs one pass at the evaluator's clock.
func (e *AlertEvaluator) EvaluateOnce(ctx context.Context) (store.AlertEvaluation, error) {
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	count := e.CountReport
	if count == nil {
		count = func(ctx context.Context, orgID, key string, at time.Time) (int, error) {
			return reports.Count(ctx, e.Store, orgID, key, at, at.Add(-e.DisconnectedAfter))
		}
	}
	return e.Store.EvaluateAlerts(ctx, now(), e.DisconnectedAfter, count)
}

// WebhookTimeout bounds one webhook delivery (the specification's 10 s).
const WebhookTimeout = 10 * time.Second

// AlertDeliverer delivers the outbox: each row is claimed by one replica's
// deliverer and sent, by e-mail or webhook; the outcome is recorded on the
// event (that write is retried, under the claim, until it lands: see
// record). A failed webhook of a rule with webhookRetryMinutes, and an
// e-mail refused for now (a 4xx reply, a server not reachable) within
// EmailRetry of its queueing, go back to the outbox for another attempt
// after a back-off; an e-mail refused for good (a 5xx reply) is recorded
// failed at once. Deliveries run concurrently, at most
// Concurrency at a time, so a slow receiver holds one slot and delays
// neither the API (which only wrote the outbox) nor other deliveries.
type AlertDeliverer struct {
	Store *store.Store
	// Holder names this replica in the claims.
	Holder string
	// Mailer sends e-mail; nil records "SMTP is not configured".
	Mailer *Mailer
	// AllowPrivate lets webhooks reach loopback, private and link-local
	// addresses (--allow-private-webhooks).
	AllowPrivate bool
	// WebhookTLS configures the webhooks' TLS (tests trust their
	// receivers' certificates); nil uses the system roots.
	WebhookTLS *tls.Config
	// Resolver resolves webhook host names; nil uses the default.
	Resolver *net.Resolver
	// Concurrency bounds the deliveries in flight (default 16).
	Concurrency int
	// Interval between looks at the outbox (default 2 s).
	Interval time.Duration
	// Timeout of one webhook (default WebhookTimeout).
	Timeout time.Duration
	// Claim is how long a claimed row stays with this deliverer (default
	// Timeout plus a minute): a replica that dies holding claims gives
	// them up to the others when they expire. It must outlive Timeout.
	Claim time.Duration
	// RetryBase is the first back-off of a rule's webhook retries and of
	// e-mail retries (default 30 s); each further one doubles, up to
	// RetryMax (default 10 min), with up to a fifth of random jitter either
	// way.
	RetryBase, RetryMax time.Duration
	// EmailRetry is how long after its queueing an e-mail refused for now
	// is tried again (--smtp-retry, default 24 h).
	EmailRetry time.Duration
	// Counted, when set, is told each delivery's channel and result
	// ("sent", "retry" or "failed") for patchd_alert_deliveries_total.
	Counted func(channel, result string)

	once   sync.Once
	client *http.Client
	slots  chan struct{}
	wg     sync.WaitGroup
}

func (d *AlertDeliverer) init() {
	d.once.Do(func() {
		if d.Concurrency <= 0 {
			d.Concurrency = 16
		}
		if d.Timeout <= 0 {
			d.Timeout = WebhookTimeout
		}
		if d.Claim <= 0 {
			d.Claim = d.Timeout + time.Minute
		}
		if d.RetryBase <= 0 {
			d.RetryBase = 30 * time.Second
		}
		if d.RetryMax <= 0 {
			d.RetryMax = 10 * time.Minute
		}
		if d.EmailRetry <= 0 {
			d.EmailRetry = 24 * time.Hour
		}
		if d.Holder == "" {
			d.Holder = "deliverer-" + store.NewID()
		}
		d.slots = make(chan struct{}, d.Concurrency)
		dialer := &alerts.Dialer{AllowPrivate: d.AllowPrivate, Timeout: d.Timeout, Resolver: d.Resolver}
		// The transport writes its HTTP/2 defaults into its TLS config: a
		// copy keeps the caller's (shared by replicas in one process) intact.
		d.client = &http.Client{
			Timeout: d.Timeout,
			Transport: &http.Transport{DialContext: dialer.DialContext, TLSClientConfig: d.WebhookTLS.Clone(), ForceAttemptHTTP2: true,
				TLSHandshakeTimeout: d.Timeout, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second},
			// A redirect could leave HTTPS; the receiver's answer is the outcome.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	})
}

// Run looks at the outbox every Interval until ctx ends, then waits for the
// deliveries in flight.
func (d *AlertDeliverer) Run(ctx context.Context) {
	d.init()
	every := d.Interval
	if every <= 0 {
		every = 2 * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	defer d.wg.Wait()
	for {
		if err := d.DeliverPending(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("alert delivery", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// DeliverPending claims what the free slots can take and starts delivering
// it; it does not wait for the deliveries (Wait does).
func (d *AlertDeliverer) DeliverPending(ctx context.Context) error {
	d.init()
	free := cap(d.slots) - len(d.slots)
	if free == 0 {
		return nil
	}
	now := time.Now()
	ids, err := d.Store.PendingDeliveries(ctx, now, free)
	if err != nil {
		return err
	}
	for _, id := range ids {
		select {
		case d.slots <- struct{}{}:
		default:
			return nil // every slot busy: the rest waits for the next look
		}
		// The claim outlives the delivery's timeout, so a delivery in
		// flight is never taken over by another replica.
		dl, ok, err := d.Store.ClaimDelivery(ctx, id, d.Holder, now, now.Add(d.Claim))
		if err != nil || !ok {
			<-d.slots
			if err != nil {
				return err
			}
			continue
		}
		d.wg.Go(func() {
			defer func() { <-d.slots }()
			outcome, final := d.deliver(ctx, dl)
			d.settle(ctx, dl, outcome, final)
		})
	}
	return nil
}

// Delivery results counted by Counted.
const (
	ResultSent   = "sent"
	ResultRetry  = "retry"
	ResultFailed = "failed"
)

// Failed tells whether a delivery outcome is a failure: an error, or a
// webhook answered with a status other than 2xx.
func Failed(outcome string) bool {
	if strings.HasPrefix(outcome, "error") {
		return true
	}
	var code int
	if _, err := fmt.Sscanf(outcome, "HTTP %d", &code); err == nil {
		return code < 200 || code > 299
	}
	return false
}

// backoff answers the wait before the attempt after attempts failed ones:
// RetryBase doubled per attempt, at most RetryMax, jittered by up to a
// fifth either way so that the retries of many events spread out.
func (d *AlertDeliverer) backoff(attempts int) time.Duration {
	wait := d.RetryBase
	for i := 1; i < attempts && wait < d.RetryMax; i++ {
		wait *= 2
	}
	wait = min(wait, d.RetryMax)
	jitter := time.Duration(rand.Int64N(int64(wait)/5*2+1)) - wait/5
	return wait + jitter
}

// settle records the outcome of one attempt: a failure that is not final
// (final: an e-mail refused for good) goes back to the outbox for another
// attempt after the back-off while that attempt would start within the
// retry window (a webhook's: the rule's webhookRetryMinutes; an e-mail's:
// EmailRetry); anything else closes the row.
func (d *AlertDeliverer) settle(ctx context.Context, dl store.Delivery, outcome string, final bool) {
	failed := Failed(outcome)
	result := ResultSent
	if failed {
		result = ResultFailed
		until := dl.RetryUntil
		if dl.Channel == store.ChannelEmail {
			until = dl.QueuedAt.Add(d.EmailRetry)
		}
		if !final && !until.IsZero() {
			next := time.Now().Add(d.backoff(dl.Attempts + 1))
			if !next.After(until) {
				d.record(ctx, dl, func(ctx context.Context) error {
					_, err := d.Store.RetryDelivery(ctx, dl.ID, d.Holder, outcome, next)
					return err
				})
				d.count(dl.Channel, ResultRetry)
				return
			}
		}
		if dl.Channel == store.ChannelEmail {
			slog.Warn("alert e-mail failed for good: listed with the rule's failed deliveries", "event", dl.Message.ID,
				"delivery", dl.ID, "attempts", dl.Attempts+1, "outcome", outcome)
		}
	}
	d.record(ctx, dl, func(ctx context.Context) error {
		return d.Store.FinishDelivery(ctx, dl.ID, d.Holder, outcome, failed, time.Now())
	})
	d.count(dl.Channel, result)
}

func (d *AlertDeliverer) count(channel, result string) {
	if d.Counted != nil {
		d.Counted(channel, result)
	}
}

// recordAfterStop bounds how long a stopping deliverer still tries to
// record an outcome.
const recordAfterStop = 10 * time.Second

// record saves a delivery's outcome, trying again until it is saved: the
// event was sent (or tried), and a claim that expired unsaved let another
// replica send it again about a minute later. While it tries, it keeps the
// claim, pushing claimed_until forward, so no replica takes the row over;
// the tries back off from 250 ms to a quarter of the claim (5 s at most).
// Once ctx ends (the replica is stopping) it tries recordAfterStop longer,
// then leaves the row to the claim's expiry: another replica sends the
// event again, with the same id for receivers to drop it.
func (d *AlertDeliverer) record(ctx context.Context, dl store.Delivery, save func(context.Context) error) {
	wait, most := 250*time.Millisecond, max(min(5*time.Second, d.Claim/4), 50*time.Millisecond)
	var stopBy time.Time
	for attempt := 1; ; attempt++ {
		// Each try has its own budget, even when ctx ended meanwhile.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := save(fctx)
		cancel()
		if err == nil {
			if attempt > 1 {
				slog.Info("alert delivery outcome recorded", "delivery", dl.ID, "attempts", attempt)
			}
			return
		}
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		ours, xerr := d.Store.ExtendDeliveryClaim(ectx, dl.ID, d.Holder, time.Now().Add(d.Claim))
		cancel()
		if xerr == nil && !ours {
			// Recorded after all (the answer to the commit was lost), or
			// the row is gone.
			return
		}
		if ctx.Err() != nil {
			if stopBy.IsZero() {
				stopBy = time.Now().Add(recordAfterStop)
			}
			if time.Now().After(stopBy) {
				slog.Error("alert delivery outcome not recorded; stopping: when the claim expires another replica sends the event again",
					"delivery", dl.ID, "event", dl.Message.ID, "err", err)
				return
			}
		}
		slog.Warn("alert delivery outcome not recorded; trying again", "delivery", dl.ID, "attempt", attempt, "in", wait, "err", err)
		time.Sleep(wait)
		wait = min(wait*2, most)
	}
}

// Wait waits for the deliveries in flight.
func (d *AlertDeliverer) Wait() { d.wg.Wait() }

// deliver makes one attempt; final says a failure is for good (an e-mail
// the server refused with a 5xx reply, or that cannot be sent as it is),
// not worth another attempt.
func (d *AlertDeliverer) deliver(ctx context.Context, dl store.Delivery) (outcome string, final bool) {
	switch dl.Channel {
	case store.ChannelWebhook:
		return d.postWebhook(ctx, dl), false
	case store.ChannelEmail:
		if d.Mailer == nil || d.Mailer.Addr == "" {
			return "error: SMTP is not configured (--smtp-addr)", true
		}
		to, err := alerts.ParseRecipients(dl.EmailTo)
		if err != nil {
			return "error: " + err.Error(), true
		}
		body := dl.Message.Text + "\n\nEvent " + dl.Message.ID + " (" + dl.Message.Event + ") at " + dl.Message.At.Format(time.RFC3339) + ".\n"
		if err := d.Mailer.Send(ctx, to, "[patchd] "+dl.Message.Title, body); err != nil {
			slog.Info("alert e-mail failed", "event", dl.Message.ID, "attempt", dl.Attempts+1, "err", err)
			return "error: " + err.Error(), PermanentMailError(err)
		}
		return "sent", false
	}
	return "error: unknown channel " + dl.Channel, true
}

// postWebhook sends the event once and answers "HTTP <status>" or the error.
// The secret signs the body and appears nowhere else.
func (d *AlertDeliverer) postWebhook(ctx context.Context, dl store.Delivery) string {
	if err := alerts.CheckWebhookURL(dl.Webhook); err != nil {
		return "error: webhook URL " + err.Error()
	}
	body := dl.Message.Body()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, dl.Webhook, strings.NewReader(string(body)))
	if err != nil {
		return "error: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "patchd-alerts/1")
	if dl.Secret != "" {
		req.Header.Set(alerts.SignatureHeader, alerts.Sign(dl.Secret, body))
	}
	resp, err := d.client.Do(req)
	if err != nil {
		var ue interface{ Timeout() bool }
		if errors.As(err, &ue) && ue.Timeout() {
			return fmt.Sprintf("error: no answer within %s", d.Timeout)
		}
		if errors.Is(err, alerts.ErrRefusedAddress) {
			return "error: " + refusal(err)
		}
		return "error: " + err.Error()
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return fmt.Sprintf("HTTP %d", resp.StatusCode)
}

// refusal extracts the dialer's refusal from the wrapped transport error.
func refusal(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, alerts.ErrRefusedAddress.Error()); i >= 0 {
		return msg[i:]
	}
	return msg
}

// SMTP security modes (--smtp-tls).
const (
	SMTPStartTLS = "starttls"
	SMTPTLS      = "tls"
	SMTPNone     = "none"
)

// ErrBadSender is a Mailer's From that is not one address.
var ErrBadSender = errors.New("smtp: the sender (--smtp-from) is not one e-mail address")

// PermanentMailError tells whether a Mailer's error is final: the server
// refused with a 5xx reply (RFC 5321: do not repeat the same request), or
// the sender is not an address. Anything else (a 4xx reply, a server not
// reachable, a connection or TLS failure) may pass when tried again.
func PermanentMailError(err error) bool {
	var reply *textproto.Error
	return errors.Is(err, ErrBadSender) || errors.As(err, &reply) && reply.Code >= 500 && reply.Code <= 599
}

// Mailer sends plain-text e-mail through an SMTP server.
type Mailer struct {
	// Addr is host:port of the server.
	Addr string
	// User and Password authenticate with PLAIN when User is set.
	User, Password string
	// From is the sender: an address, or a name and an address
	// ("patchd alerts <patchd@example.com>"), as net/mail parses it. The
	// address alone is the envelope's (MAIL FROM); the whole is the From
	// header.
	From string
	// TLS is starttls (default), tls (implicit, usually port 465) or none.
	TLS string
	// TLSConfig overrides the TLS settings (tests trust their server).
	TLSConfig *tls.Config
	// Timeout bounds a whole conversation (default 30 s).
	Timeout time.Duration
}

// Send sends one message to the recipients.
func (m *Mailer) Send(ctx context.Context, to []string, subject, body string) error {
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	from, err := mail.ParseAddress(m.From)
	if err != nil {
		return fmt.Errorf("%w: %q: %v", ErrBadSender, m.From, err)
	}
	host, _, err := net.SplitHostPort(m.Addr)
	if err != nil {
		return fmt.Errorf("smtp address %q: %w", m.Addr, err)
	}
	cfg := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if m.TLSConfig != nil {
		cfg = m.TLSConfig.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	dialer := &net.Dialer{Deadline: deadline}
	var conn net.Conn
	if m.TLS == SMTPTLS {
		conn, err = tls.DialWithDialer(dialer, "tcp", m.Addr, cfg)
	} else {
		conn, err = dialer.DialContext(ctx, "tcp", m.Addr)
	}
	if err != nil {
		return fmt.Errorf("smtp connect: %w", err)
	}
	conn.SetDeadline(deadline)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("smtp greeting: %w", err)
	}
	defer c.Close()
	if m.TLS == "" || m.TLS == SMTPStartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return fmt.Errorf("smtp: the server does not offer STARTTLS (use --smtp-tls tls or none)")
		}
		if err := c.StartTLS(cfg); err != nil {
			return fmt.Errorf("smtp starttls: %w", err)
		}
	}
	if m.User != "" {
		if err := c.Auth(smtp.PlainAuth("", m.User, m.Password, host)); err != nil {
			return fmt.Errorf("smtp auth: %w", err)
		}
	}
	if err := c.Mail(from.Address); err != nil {
		return fmt.Errorf("smtp sender: %w", err)
	}
	for _, rcpt := range to {
		if err := c.Rcpt(rcpt); err != nil {
			return fmt.Errorf("smtp recipient %s: %w", rcpt, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("smtp data: %w", err)
	}
	if _, err := io.WriteString(w, compose(from, to, subject, body)); err != nil {
		w.Close()
		return fmt.Errorf("smtp data: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp data: %w", err)
	}
	// The server took the message (250 after the data): it is sent, whatever
	// becomes of the goodbye. Counting a lost QUIT answer as a failure would
	// send the message again.
	if err := c.Quit(); err != nil {
		slog.Debug("smtp quit after the message was accepted", "err", err)
	}
	return nil
}

// compose writes the message with CRLF line ends; the SMTP client's data
// writer dot-stuffs it. The From header is the sender as parsed (a name
// quoted or encoded as RFC 5322 and 2047 want).
func compose(from *mail.Address, to []string, subject, body string) string {
	var b strings.Builder
	header := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	header("From", from.String())
	header("To", strings.Join(to, ", "))
	header("Subject", mime.QEncoding.Encode("utf-8", strings.NewReplacer("\r", " ", "\n", " ").Replace(subject)))
	header("Date", time.Now().UTC().Format(time.RFC1123Z))
	header("Message-ID", "<"+store.NewID()+"@patchd>")
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "8bit")
	b.WriteString("\r\n")
	body = strings.ReplaceAll(body, "\r\n", "\n")
	b.WriteString(strings.ReplaceAll(body, "\n", "\r\n"))
	return b.String()
}
