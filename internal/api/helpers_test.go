package api_test

import (
	"io"
	"net/http"
	"strings"
)

func io_Copy(dst *strings.Builder, resp *http.Response) (int64, error) {
	return io.Copy(dst, resp.Body)
}
