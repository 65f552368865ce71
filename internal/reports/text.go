package reports

import (
	"encoding/json"
	"strconv"
)

// Text writes a report value as plain text (the console's report pages):
// null as empty, numbers without exponents, anything else as its JSON. CSV
// goes through internal/safecsv, which also guards text cells against
// spreadsheet formulas.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
