package console_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// box is an element's place on the page.
type box struct {
	Left, Top, Right, Bottom, Width, Height float64
	Found                                   bool
}

func (tb *tab) box(sel string) box {
	tb.t.Helper()
	var b box
	tb.do("where is "+sel, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		v, err := chromedp.Evaluate[box](`(function () { var el = document.querySelector("`+sel+`"); if (!el) { return {Found: false}; }
			var r = el.getBoundingClientRect(); return {Found: true, Left: r.left, Top: r.top + window.scrollY, Right: r.right, Bottom: r.bottom + window.scrollY, Width: r.width, Height: r.height}; })()`)(ctx, tg)
		b = v
		return chromedp.Void{}, err
	})
	if !b.Found {
		tb.t.Fatalf("no %s on the page", sel)
	}
	return b
}

// TestBrowserFormsLaidOut: the Users page's add-user form and the
// endpoint page's Remove button are laid out cleanly at 1440 px and on a
// phone: the add-user form's fields each beside their label, its way of
// giving a password a group of its own with the one-time password field
// beside its choice, the button below; the Remove button in a danger
// zone of its own, apart from the Save button and aligned with it.
func TestBrowserFormsLaidOut(t *testing.T) {
	tb := newTab(t)
	e := apitest.New(t)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	ag := e.Enroll("m1", "win-a", "windows")
	ag.MustInventory(apitest.Sample("win-a", "windows"))
	tb.signInWithPassword(e.URL, "alice@example.com", "/console/users", "#new-user-form")
	for _, phone := range []bool{false, true} {
		name := "wide"
		if phone {
			tb.onPhone()
			name = "phone"
		}
		tb.visit(e.URL, "/console/users", name+"-users")
		email, role := tb.box("#uemail"), tb.box("#urole")
		for _, f := range []struct {
			label string
			field box
		}{{`label[for='uemail']`, email}, {`label[for='urole']`, role}} {
			if l := tb.box(f.label); !beside(l, f.field) {
				t.Errorf("%s: the add-user form's %s is not beside its field: %+v, %+v", name, f.label, l, f.field)
			}
		}
		how, add := tb.box("#new-user-form fieldset"), tb.box(`#new-user-form > button[type='submit']`)
		if how.Top < max(email.Bottom, role.Bottom) || add.Top < how.Bottom {
			t.Errorf("%s: the add-user form is not e-mail and role, then how the password is given, then the button: fields end at %.0f, the choice %.0f–%.0f, the button at %.0f",
				name, max(email.Bottom, role.Bottom), how.Top, how.Bottom, add.Top)
		}
		// Beside its choice; on a phone, under it.
		once, pass := tb.box(`#new-user-form input[value='password']`), tb.box("#upass")
		if !phone && !(pass.Top < once.Bottom && once.Top < pass.Bottom && pass.Left > once.Right) || phone && !(pass.Top >= once.Bottom && pass.Bottom <= how.Bottom) {
			t.Errorf("%s: the one-time password field is not beside (under) its choice: %+v, %+v", name, once, pass)
		}
		tb.visit(e.URL, "/console/endpoints/"+ag.ID, name+"-endpoint")
		save, run, remove := tb.box(`#h-edit ~ form button[type='submit'].primary`), tb.box(`form[action='/console/actions'] button[type='submit']`), tb.box("#remove-endpoint button")
		if remove.Top < run.Bottom+16 || remove.Top < save.Bottom+16 || abs(remove.Left-save.Left) > 1 {
			t.Errorf("%s: the Remove button (%+v) is not apart below the panel's forms (Save %+v, Run now %+v)", name, remove, save, run)
		}
	}
}

// beside tells a label on its field's line, left of it.
func beside(label, field box) bool {
	mid := (label.Top + label.Bottom) / 2
	return mid > field.Top && mid < field.Bottom && label.Right <= field.Left+1
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
