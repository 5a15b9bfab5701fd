package moov

// This file is the whole of Moov's wire format: the SOAP envelopes the
// adapter sends and reads, and the ones the simulator reads and sends. When
// Moov Tchad's own document differs from what is written here, this file
// (and testdata/*.xml, its golden envelopes) is what to correct.
//
// Source: the community SDKs for Moov Benin/Togo (PHP v1p3r75/moov-money-
// api-php-sdk, TypeScript Brainsial/moov-money-api-sdk). Moov Tchad
// publishes nothing, so every detail marked UNVERIFIED is a guess from them.

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Namespace is the merchant API's XML namespace (UNVERIFIED for Tchad).
const Namespace = "http://api.merchant.tlc.com/"

const soapEnvNS = "http://schemas.xmlsoap.org/soap/envelope/"

// ContentType is what both SDKs send, although the envelope is SOAP 1.1
// (whose usual type is text/xml). UNVERIFIED: change here if Moov refuses it.
const ContentType = "application/soap+xml; charset=utf-8"

// The operations momopay uses.
const (
	opPushWithPending = "PushWithPending"
	opStatus          = "getTransactionStatus"
)

// pushRequest is the body of PushWithPending (and Push, same fields).
type pushRequest struct {
	Token   string `xml:"token"`
	MSISDN  string `xml:"msisdn"`
	Message string `xml:"message"`
	Amount  int64  `xml:"amount"`
	// ExternalData1 carries our internal_ref, ExternalData2 nothing yet.
	ExternalData1 string `xml:"externaldata1"`
	ExternalData2 string `xml:"externaldata2"`
	Fee           int64  `xml:"fee"`
}

// statusRequest is the body of getTransactionStatus: the token beside a
// <request> element holding the transid (the SDKs pass the push's
// referenceid as transid; UNVERIFIED whether externaldata1 is accepted too).
type statusRequest struct {
	Token   string `xml:"token"`
	TransID string `xml:"request>transid"`
}

// answer is the <return> of every operation. Status is kept as text so
// that an unknown or malformed value is seen rather than read as 0.
type answer struct {
	Description string `xml:"description"`
	ReferenceID string `xml:"referenceid"`
	Status      string `xml:"status"`
	TransID     string `xml:"transid"`
	Message     string `xml:"message,omitempty"`
}

// code returns the numeric status; ok is false when it is missing or not
// an integer.
func (a answer) code() (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(a.Status))
	return n, err == nil
}

// Fault is a soap:Fault answered by Moov. Its meaning is unknown to us, so
// a push answered by one may or may not have been taken.
type Fault struct {
	Code   string
	String string
}

func (f *Fault) Error() string { return fmt.Sprintf("soap fault %s: %s", f.Code, f.String) }

// errMalformed marks an answer that is not a SOAP envelope we can read.
var errMalformed = errors.New("malformed SOAP answer")

// encodeRequest builds the envelope calling operation op of the merchant
// API with body's fields as its children, the way the SDKs write it:
//
//	<soapenv:Envelope xmlns:soapenv=… xmlns:api=…><soapenv:Header/>
//	<soapenv:Body><api:op>…</api:op></soapenv:Body></soapenv:Envelope>
func encodeRequest(op string, body any) ([]byte, error) {
	inner, err := xml.Marshal(body)
	if err != nil {
		return nil, err
	}
	// Marshal wrote <pushRequest>…</pushRequest>: keep only the children.
	inner = inner[bytes.IndexByte(inner, '>')+1 : bytes.LastIndexByte(inner, '<')]
	var b bytes.Buffer
	b.WriteString(xml.Header)
	b.WriteString(`<soapenv:Envelope xmlns:soapenv="` + soapEnvNS + `" xmlns:api="` + Namespace + `">`)
	b.WriteString(`<soapenv:Header/><soapenv:Body><api:` + op + `>`)
	b.Write(inner)
	b.WriteString(`</api:` + op + `></soapenv:Body></soapenv:Envelope>`)
	return b.Bytes(), nil
}

// envelope reads any SOAP 1.1 or 1.2 envelope: names are matched without
// their namespace, so a prefix or version change does not break reading.
type envelope struct {
	Body struct {
		Fault *struct {
			Code   string `xml:"faultcode"`
			String string `xml:"faultstring"`
			// SOAP 1.2 spelling.
			Code12   string `xml:"Code>Value"`
			Reason12 string `xml:"Reason>Text"`
		} `xml:"Fault"`
		Calls []struct {
			XMLName xml.Name
			Inner   []byte `xml:",innerxml"`
		} `xml:",any"`
	} `xml:"Body"`
}

// decodeAnswer reads Moov's answer to op: the single child of
// <opResponse> (named return in the SDKs' examples; one SDK also accepts
// response or result, so any name is read). A soap:Fault gives *Fault.
func decodeAnswer(body []byte, op string) (answer, error) {
	if err := shallow(body, maxDepth); err != nil {
		return answer{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	var env envelope
	if err := xml.Unmarshal(body, &env); err != nil {
		return answer{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if f := env.Body.Fault; f != nil {
		fault := &Fault{Code: f.Code, String: f.String}
		if fault.Code == "" {
			fault.Code, fault.String = f.Code12, f.Reason12
		}
		return answer{}, fault
	}
	var calls int
	for _, c := range env.Body.Calls {
		if c.XMLName.Local != "Fault" {
			calls++
		}
	}
	if calls > 1 {
		// Two answers in one body may disagree: neither is believed.
		return answer{}, fmt.Errorf("%w: %d answers in one body", errMalformed, calls)
	}
	for _, c := range env.Body.Calls {
		if c.XMLName.Local == "Fault" {
			continue
		}
		if c.XMLName.Local != op+"Response" {
			return answer{}, fmt.Errorf("%w: got %s, want %sResponse", errMalformed, c.XMLName.Local, op)
		}
		var ret struct {
			Answers []answer `xml:",any"`
		}
		if err := xml.Unmarshal(wrap(c.Inner), &ret); err != nil {
			return answer{}, fmt.Errorf("%w: %v", errMalformed, err)
		}
		if len(ret.Answers) != 1 {
			return answer{}, fmt.Errorf("%w: %d answers in %sResponse", errMalformed, len(ret.Answers), op)
		}
		if name := repeatedField(c.Inner); name != "" {
			// encoding/xml keeps the last of two equal elements, so
			// <status>100</status><status>0</status> would settle on
			// whichever came last: an answer that says two things says
			// neither.
			return answer{}, fmt.Errorf("%w: <%s> given twice in one answer", errMalformed, name)
		}
		if _, ok := ret.Answers[0].code(); !ok {
			return answer{}, fmt.Errorf("%w: status %q is not a number", errMalformed, ret.Answers[0].Status)
		}
		return ret.Answers[0], nil
	}
	return answer{}, fmt.Errorf("%w: empty soap body", errMalformed)
}

// maxDepth is how deeply an answer's elements may nest: Moov's nest five
// deep. encoding/xml keeps a record per open element, so an answer
// nested hundreds of thousands deep cost about 30 MB to read.
const maxDepth = 32

// shallow reads body's tokens without keeping them (RawToken keeps no
// stack of open elements) and refuses one nested deeper than limit.
func shallow(body []byte, limit int) error {
	d := xml.NewDecoder(bytes.NewReader(body))
	depth := 0
	for {
		t, err := d.RawToken()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch t.(type) {
		case xml.StartElement:
			if depth++; depth > limit {
				return fmt.Errorf("elements nested deeper than %d", limit)
			}
		case xml.EndElement:
			depth--
		}
	}
}

// repeatedField returns the name of a field that the answer in inner (the
// content of <opResponse>: one element, whose children are the fields)
// holds twice, or "". inner has been read whole before, so a token error
// cannot happen here; it is read as no repetition.
func repeatedField(inner []byte) string {
	d := xml.NewDecoder(bytes.NewReader(inner))
	seen, depth := map[string]bool{}, 0
	for {
		t, err := d.RawToken()
		if err != nil {
			return ""
		}
		switch e := t.(type) {
		case xml.StartElement:
			if depth++; depth == 2 {
				if seen[e.Name.Local] {
					return e.Name.Local
				}
				seen[e.Name.Local] = true
			}
		case xml.EndElement:
			depth--
		}
	}
}

func wrap(inner []byte) []byte {
	return append(append([]byte("<x>"), inner...), "</x>"...)
}

// The simulator's side: read a request, write an answer or a fault.

// request is a call read by the simulator.
type request struct {
	Op     string
	Push   pushRequest
	Status statusRequest
}

// decodeRequest reads an envelope the adapter (or any SOAP client) sent.
func decodeRequest(body []byte) (request, error) {
	var env envelope
	if err := xml.Unmarshal(body, &env); err != nil {
		return request{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if len(env.Body.Calls) != 1 {
		return request{}, fmt.Errorf("%w: %d operations in body", errMalformed, len(env.Body.Calls))
	}
	c := env.Body.Calls[0]
	r := request{Op: c.XMLName.Local}
	var err error
	switch r.Op {
	case opPushWithPending, "Push":
		err = xml.Unmarshal(wrap(c.Inner), &r.Push)
	case opStatus:
		err = xml.Unmarshal(wrap(c.Inner), &r.Status)
	default:
		return r, fmt.Errorf("unknown operation %q", r.Op)
	}
	if err != nil {
		return r, fmt.Errorf("%w: %v", errMalformed, err)
	}
	return r, nil
}

// encodeAnswer writes Moov's answer to op, as in the SDKs' examples:
// <soap:Envelope><soap:Body><ns2:opResponse xmlns:ns2=…><return>….
func encodeAnswer(op string, a answer) []byte {
	inner, _ := xml.Marshal(struct {
		XMLName xml.Name `xml:"return"`
		answer
	}{answer: a})
	var b bytes.Buffer
	b.WriteString(`<soap:Envelope xmlns:soap="` + soapEnvNS + `"><soap:Body>`)
	b.WriteString(`<ns2:` + op + `Response xmlns:ns2="` + Namespace + `">`)
	b.Write(inner)
	b.WriteString(`</ns2:` + op + `Response></soap:Body></soap:Envelope>`)
	return b.Bytes()
}

// encodeFault writes a SOAP 1.1 fault (sent with HTTP 500).
func encodeFault(code, text string) []byte {
	var esc bytes.Buffer
	xml.EscapeText(&esc, []byte(text))
	return []byte(`<soap:Envelope xmlns:soap="` + soapEnvNS + `"><soap:Body><soap:Fault>` +
		`<faultcode>` + code + `</faultcode><faultstring>` + esc.String() + `</faultstring>` +
		`</soap:Fault></soap:Body></soap:Envelope>`)
}
