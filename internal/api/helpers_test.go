package api_test

import (
	"github.com/patchd/patchd/agentproto"
	"io"
	"net/http"
	"strings"
)

func io_Copy(dst *strings.Builder, resp *http.Response) (int64, error) {
	return io.Copy(dst, resp.Body)
}

func struct2(name, version string) agentproto.Software {
	return agentproto.Software{Name: name, Version: &version}
}
