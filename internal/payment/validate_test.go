package payment

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

func valid() CreateRequest {
	return CreateRequest{Reference: "order-1", Amount: 100, Currency: "XAF", Operator: "AIRTEL", PhoneNumber: "+23566000000"}
}

func TestCreateRequestValidate(t *testing.T) {
	desc := func(n int) *string { s := strings.Repeat("a", n); return &s }
	cases := []struct {
		name   string
		change func(r *CreateRequest)
		code   string
		fields []string
	}{
		{"valid at the minimum", func(r *CreateRequest) {}, "", nil},
		{"valid MOOV with 255-char description", func(r *CreateRequest) { r.Operator = "MOOV"; r.Description = desc(255) }, "", nil},
		{"reference of 64 allowed characters", func(r *CreateRequest) { r.Reference = strings.Repeat("aZ9._:/-", 8) }, "", nil},
		{"empty reference", func(r *CreateRequest) { r.Reference = "" }, EINVALID, []string{"reference"}},
		{"reference of 65", func(r *CreateRequest) { r.Reference = strings.Repeat("a", 65) }, EINVALID, []string{"reference"}},
		{"reference with unicode", func(r *CreateRequest) { r.Reference = "commande-é" }, EINVALID, []string{"reference"}},
		{"description of 256", func(r *CreateRequest) { r.Description = desc(256) }, EINVALID, []string{"description"}},
		{"currency", func(r *CreateRequest) { r.Currency = "XOF" }, EINVALID, []string{"currency"}},
		{"phone with spaces", func(r *CreateRequest) { r.PhoneNumber = "+235 66 00 00 00" }, EINVALID, []string{"phone_number"}},
		{"phone with 9 digits", func(r *CreateRequest) { r.PhoneNumber = "+235660000001" }, EINVALID, []string{"phone_number"}},
		{"operator mixed case", func(r *CreateRequest) { r.Operator = "Moov" }, EINVALID, []string{"operator"}},
		{"operator empty", func(r *CreateRequest) { r.Operator = "" }, EINVALID, []string{"operator"}},
		{"operator MTN", func(r *CreateRequest) { r.Operator = "MTN" }, EUNPROCESSABLE, []string{"operator"}},
		{"amount 99", func(r *CreateRequest) { r.Amount = 99 }, EUNPROCESSABLE, []string{"amount"}},
		{"amount negative", func(r *CreateRequest) { r.Amount = -100 }, EUNPROCESSABLE, []string{"amount"}},
		{"decode problem wins", func(r *CreateRequest) { r.Problems = map[string]string{"amount": "must be a whole number"} }, EINVALID, []string{"amount"}},
		{"both kinds: 400 naming all", func(r *CreateRequest) { r.Amount = 1; r.Currency = "" }, EINVALID, []string{"amount", "currency"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := valid()
			c.change(&r)
			err := r.Validate()
			if got := ErrorCode(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if err == nil {
				return
			}
			e := err.(*Error)
			if len(e.Fields) != len(c.fields) {
				t.Errorf("fields %v, want %v", e.Fields, c.fields)
			}
			for _, f := range c.fields {
				if e.Fields[f] == "" {
					t.Errorf("no message for %s in %v", f, e.Fields)
				}
			}
		})
	}
}

func TestListFilterValidate(t *testing.T) {
	now := time.Now()
	ok := ListFilter{Page: 1, PerPage: 100, Status: StatusExpired, Operator: OperatorMoov, From: now, To: now}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid filter refused: %v", err)
	}
	for _, f := range []ListFilter{
		{Page: 0, PerPage: 20}, {Page: 1, PerPage: 101}, {Page: 1, PerPage: 0},
		{Page: 1, PerPage: 20, Status: "pending"}, {Page: 1, PerPage: 20, Operator: "MTN"},
		{Page: 1, PerPage: 20, From: now, To: now.Add(-time.Second)},
	} {
		if ErrorCode(f.Validate()) != EINVALID {
			t.Errorf("%+v accepted", f)
		}
	}
}

func TestInternalRef(t *testing.T) {
	pattern := regexp.MustCompile(`^SERVICE-[A-Z0-9]{8}$`)
	seen := map[string]bool{}
	chars := map[rune]bool{}
	for range 2000 {
		ref := newInternalRef()
		if !pattern.MatchString(ref) || seen[ref] {
			t.Fatalf("bad or repeated internal_ref %q", ref)
		}
		seen[ref] = true
		for _, c := range ref[8:] {
			chars[c] = true
		}
	}
	if len(chars) != 36 {
		t.Errorf("only %d of 36 characters ever drawn", len(chars))
	}
}

func TestStatus(t *testing.T) {
	for s, want := range map[Status][2]any{
		StatusPending: {false, ""}, StatusSuccess: {true, "transaction.success"}, StatusFailed: {true, "transaction.failed"},
		StatusTimeout: {true, "transaction.timeout"}, StatusExpired: {true, ""}, "DONE": {false, ""},
	} {
		if s.Final() != want[0] || s.Event() != want[1] {
			t.Errorf("%s: final %v event %q", s, s.Final(), s.Event())
		}
	}
}
