package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/patchd/patchd/apiv1"
)

type scriptsData struct {
	Items []apiv1.Script
	// F is the new script form's values; Refused why they were refused
	// (the form is shown again as typed).
	F         url.Values
	Refused   string
	Languages []string
}

func (c *Console) scriptList(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.scriptsPage(w, r, s, http.StatusOK, url.Values{"language": {"powershell"}}, "")
}

func (c *Console) scriptsPage(w http.ResponseWriter, r *http.Request, s *session, status int, f url.Values, refused string) error {
	var list apiv1.List[apiv1.Script]
	if err := c.callAPI(r, s, http.MethodGet, "/api/v1/scripts", nil, &list); err != nil {
		return err
	}
	return c.render(w, r, s, status, "scripts", "", "Scripts", "scripts", scriptsData{Items: list.Items, F: f, Refused: refused, Languages: formLanguages})
}

// scriptAgain shows the scripts page with the refused form as typed.
func (c *Console) scriptAgain(w http.ResponseWriter, r *http.Request, s *session, err error) error {
	text, ok := scriptLabels.refusal(err)
	if !ok {
		return err
	}
	return c.scriptsPage(w, r, s, refusedStatus(err), r.PostForm, text)
}

// scriptBody reads the script form: parameters one a line as NAME=DEFAULT
// (NAME!= for a required one), reboot exit codes comma-separated.
func scriptBody(f url.Values) (apiv1.ScriptBody, error) {
	b := apiv1.ScriptBody{Name: ptr(f.Get("name")), Language: ptr(f.Get("language")), Code: ptr(f.Get("code"))}
	params := []apiv1.ScriptParameter{}
	for _, line := range strings.Split(f.Get("parameters"), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		name, def, _ := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		required := strings.HasSuffix(name, "!")
		params = append(params, apiv1.ScriptParameter{Name: strings.TrimSuffix(name, "!"), Default: def, Required: required})
	}
	b.Parameters = &params
	codes := []int{}
	for _, field := range strings.Split(f.Get("rebootExitCodes"), ",") {
		if field = strings.TrimSpace(field); field == "" {
			continue
		}
		n, err := strconv.Atoi(field)
		if err != nil {
			return b, badRequest("Reboot exit codes: " + field + " is not an integer.")
		}
		codes = append(codes, n)
	}
	b.RebootExitCodes = &codes
	if t := strings.TrimSpace(f.Get("timeoutSeconds")); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil {
			return b, badRequest("The time limit must be a number of seconds.")
		}
		b.TimeoutSeconds = &n
	}
	return b, nil
}

// scriptCreate stores a script through the REST API's operation; a
// refused form comes back as typed, its problems in the form's words.
func (c *Console) scriptCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	body, err := scriptBody(r.PostForm)
	if err == nil {
		err = c.callAPI(r, s, http.MethodPost, "/api/v1/scripts", body, nil)
	}
	if err != nil {
		return c.scriptAgain(w, r, s, err)
	}
	return c.done(w, r, "/console/scripts", nil, "Script "+strings.TrimSpace(r.PostFormValue("name"))+" saved.")
}

func (c *Console) scriptDelete(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.deleted(w, r, s, deletion{api: "/api/v1/scripts/" + url.PathEscape(r.PathValue("id")), page: "/console/scripts", list: "/console/scripts", ok: "Script deleted."})
}
