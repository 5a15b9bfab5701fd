package moov

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncodeRequestGolden checks the envelopes the adapter sends, byte for
// byte, against the SDKs' shape written down in testdata.
func TestEncodeRequestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		op   string
		body any
	}{
		{"push_request.xml", opPushWithPending, pushRequest{Token: "TOKEN==", MSISDN: "23566000001",
			Message: "Order <42> & co", Amount: 1500, ExternalData1: "SERVICE-AB12CD34"}},
		{"status_request.xml", opStatus, statusRequest{Token: "TOKEN==", TransID: "72024103000000009"}},
	} {
		got, err := encodeRequest(tc.op, tc.body)
		if err != nil {
			t.Fatal(err)
		}
		if want := golden(t, tc.file); string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.file, got, want)
		}
	}
}

// TestDecodeRequestGolden checks that the simulator reads what the adapter
// sends (the golden envelopes), so both sides follow one definition.
func TestDecodeRequestGolden(t *testing.T) {
	t.Parallel()
	r, err := decodeRequest(golden(t, "push_request.xml"))
	if err != nil {
		t.Fatal(err)
	}
	want := pushRequest{Token: "TOKEN==", MSISDN: "23566000001", Message: "Order <42> & co", Amount: 1500, ExternalData1: "SERVICE-AB12CD34"}
	if r.Op != opPushWithPending || r.Push != want {
		t.Errorf("push: got %s %+v", r.Op, r.Push)
	}
	r, err = decodeRequest(golden(t, "status_request.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Op != opStatus || r.Status != (statusRequest{Token: "TOKEN==", TransID: "72024103000000009"}) {
		t.Errorf("status: got %s %+v", r.Op, r.Status)
	}
	if _, err := decodeRequest([]byte(`<Envelope><Body><api:Refund/></Body></Envelope>`)); err == nil {
		t.Error("unknown operation read without error")
	}
}

// TestDecodeAnswerGolden reads the recorded answers: the SDK's examples,
// another SDK's element name, SOAP 1.1 and 1.2 faults, broken bodies.
func TestDecodeAnswerGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file      string
		op        string
		want      answer
		fault     *Fault
		malformed bool
	}{
		{file: "push_answer_unauthorised.xml", op: opPushWithPending,
			want: answer{Description: "UNAUTHORISED_ERROR", ReferenceID: "72024103000000009", Status: "4", TransID: "pi_NyM_1642619082990"}},
		{file: "push_answer_pending.xml", op: opPushWithPending,
			want: answer{Description: "PENDING", ReferenceID: "72024103000000009", Status: "100", TransID: "pi_NyM_1642619082990"}},
		{file: "status_answer_completed.xml", op: opStatus,
			want: answer{Description: "SUCCESS", ReferenceID: "72024103000000009", Status: "0", TransID: "SERVICE-AB12CD34"}},
		{file: "status_answer_response_element.xml", op: opStatus,
			want: answer{Description: "INSUFFICIENT_FUNDS", ReferenceID: "72024103000000009", Status: " 10 ", TransID: "SERVICE-AB12CD34"}},
		{file: "fault.xml", op: opStatus, fault: &Fault{Code: "soap:Server", String: "For input string"}},
		{file: "fault_soap12.xml", op: opStatus, fault: &Fault{Code: "env:Receiver", String: "Database connection error"}},
		{file: "answer_no_status.xml", op: opPushWithPending, malformed: true},
		// The answer to another operation is not taken for this one's.
		{file: "push_answer_pending.xml", op: opStatus, malformed: true},
	} {
		a, err := decodeAnswer(golden(t, tc.file), tc.op)
		var fault *Fault
		switch {
		case tc.fault != nil:
			if !errors.As(err, &fault) || *fault != *tc.fault {
				t.Errorf("%s: got %v, want fault %+v", tc.file, err, tc.fault)
			}
		case tc.malformed:
			if !errors.Is(err, errMalformed) {
				t.Errorf("%s: got %+v, %v; want malformed", tc.file, a, err)
			}
		case err != nil || a != tc.want:
			t.Errorf("%s: got %+v, %v; want %+v", tc.file, a, err, tc.want)
		}
	}
	for _, body := range []string{"", "not xml", "<html><body>502 Bad Gateway</body></html>",
		`<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>`} {
		if _, err := decodeAnswer([]byte(body), opStatus); !errors.Is(err, errMalformed) {
			t.Errorf("%q: got %v, want malformed", body, err)
		}
	}
}

// TestAnswerRoundTrip checks that what the simulator writes is read back.
func TestAnswerRoundTrip(t *testing.T) {
	t.Parallel()
	in := answer{Description: "A & <B>", ReferenceID: "1", Status: "-1", TransID: "SERVICE-X"}
	out, err := decodeAnswer(encodeAnswer(opStatus, in), opStatus)
	if err != nil || out != in {
		t.Fatalf("got %+v, %v; want %+v", out, err, in)
	}
	_, err = decodeAnswer(encodeFault("soap:Client", "bad <input>"), opStatus)
	var f *Fault
	if !errors.As(err, &f) || f.String != "bad <input>" {
		t.Fatalf("fault: got %v", err)
	}
}

// TestToken checks the token against one made by the openssl command line:
//
//	KEY=tlc12345tlc12345tlc12345tlc12345; IV=$(printf %s "$KEY" | sha256sum | cut -c1-16)
//	printf %s "0:merchant:s3cret" | openssl enc -aes-256-cbc -K $(printf %s "$KEY" | xxd -p -c 64) \
//	  -iv $(printf %s "$IV" | xxd -p) | base64 -w0
func TestToken(t *testing.T) {
	t.Parallel()
	got, err := Token("merchant", "s3cret", "tlc12345tlc12345tlc12345tlc12345")
	if want := "cKpYPlE1soY3RKBu50lIChKdsGogiGEgr+TuWmcZaOU="; err != nil || got != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
	if _, err := Token("u", "p", "short"); err == nil {
		t.Fatal("a 5-byte key was accepted")
	}
}
