package apitest

import (
	"crypto/tls"
	"encoding/base64"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"testing"
)

// Mail is one message the test SMTP server accepted.
type Mail struct {
	From string
	To   []string
	Data string
	// TLS says the message came over TLS (implicit or STARTTLS); Auth is
	// the PLAIN identity "user:password" when the client authenticated.
	TLS  bool
	Auth string
}

// SMTPServer is a minimal SMTP server for tests: EHLO, STARTTLS (when it
// has a certificate), AUTH PLAIN, MAIL, RCPT, DATA, RSET, NOOP, QUIT.
type SMTPServer struct {
	Addr string
	// Mail receives every accepted message.
	Mail chan Mail
	ln   net.Listener
	tls  *tls.Config
	wg   sync.WaitGroup
}

// NewSMTPServer listens on 127.0.0.1. With cfg set it offers STARTTLS, or,
// when implicit, speaks TLS from the first byte.
func NewSMTPServer(t testing.TB, cfg *tls.Config, implicit bool) *SMTPServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &SMTPServer{Addr: ln.Addr().String(), Mail: make(chan Mail, 100), ln: ln, tls: cfg}
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if implicit {
				c = tls.Server(c, cfg)
			}
			s.wg.Go(func() { s.serve(c, implicit) })
		}
	})
	return s
}

func (s *SMTPServer) serve(conn net.Conn, secure bool) {
	defer conn.Close()
	tp := textproto.NewConn(conn)
	reply := func(line string) { tp.PrintfLine("%s", line) }
	reply("220 patchd-test ESMTP")
	var m Mail
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO", "HELO":
			lines := []string{"250-patchd-test", "250-AUTH PLAIN"}
			if s.tls != nil && !secure {
				lines = append(lines, "250-STARTTLS")
			}
			lines = append(lines, "250 8BITMIME")
			for _, l := range lines {
				reply(l)
			}
		case "STARTTLS":
			if s.tls == nil || secure {
				reply("502 not available")
				continue
			}
			reply("220 go ahead")
			tc := tls.Server(conn, s.tls)
			if err := tc.Handshake(); err != nil {
				return
			}
			conn, secure = tc, true
			tp = textproto.NewConn(conn)
			reply = func(line string) { tp.PrintfLine("%s", line) }
			m = Mail{}
		case "AUTH":
			mech, resp, _ := strings.Cut(arg, " ")
			if !strings.EqualFold(mech, "PLAIN") {
				reply("504 unsupported")
				continue
			}
			if resp == "" {
				reply("334 ")
				if resp, err = tp.ReadLine(); err != nil {
					return
				}
			}
			raw, err := base64.StdEncoding.DecodeString(resp)
			parts := strings.Split(string(raw), "\x00")
			if err != nil || len(parts) != 3 {
				reply("501 malformed")
				continue
			}
			m.Auth = parts[1] + ":" + parts[2]
			reply("235 ok")
		case "MAIL":
			m.From = angle(arg)
			reply("250 ok")
		case "RCPT":
			m.To = append(m.To, angle(arg))
			reply("250 ok")
		case "DATA":
			reply("354 end with .")
			data, err := tp.ReadDotBytes()
			if err != nil {
				return
			}
			m.Data, m.TLS = string(data), secure
			s.Mail <- m
			m = Mail{Auth: m.Auth}
			reply("250 queued")
		case "RSET":
			m = Mail{Auth: m.Auth}
			reply("250 ok")
		case "NOOP":
			reply("250 ok")
		case "QUIT":
			reply("221 bye")
			return
		default:
			reply("500 unknown command")
		}
	}
}

// angle answers the address between < and > of a MAIL or RCPT argument.
func angle(arg string) string {
	i, j := strings.IndexByte(arg, '<'), strings.IndexByte(arg, '>')
	if i < 0 || j < i {
		return ""
	}
	return arg[i+1 : j]
}
