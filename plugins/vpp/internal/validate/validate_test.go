package validate_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/internal/validate"
)

func TestNothingWrong(t *testing.T) {
	var p validate.Problems
	if err := p.Err(); err != nil {
		t.Errorf("no problems: %v", err)
	}
}

func TestProblemsNameEveryField(t *testing.T) {
	modelErr := &models.ValidationError{Model: "vpp.l3.Route", Fields: []models.FieldError{{Field: "dst_network", Problem: "required"}}}
	var p validate.Problems
	p.Model(modelErr)
	p.Add("weight", "%d is above 255", 300)
	err := p.Err()

	var ive *api.InvalidValueError
	if !errors.As(err, &ive) {
		t.Fatalf("%v (%T), want an *api.InvalidValueError", err, err)
	}
	if want := []string{"dst_network", "weight"}; !slices.Equal(ive.InvalidFields, want) {
		t.Errorf("fields %v, want %v", ive.InvalidFields, want)
	}
	want := "invalid value (fields dst_network, weight): invalid vpp.l3.Route value: dst_network: required; weight: 300 is above 255"
	if err.Error() != want {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
	var ve *models.ValidationError
	if !errors.As(err, &ve) || ve != modelErr {
		t.Errorf("the models error is not found in %v", err)
	}
}

func TestOneProblemIsTheError(t *testing.T) {
	var p validate.Problems
	p.Add("mac_age", "%d is above 255 minutes", 256)
	var ive *api.InvalidValueError
	if err := p.Err(); !errors.As(err, &ive) || ive.Err.Error() != "mac_age: 256 is above 255 minutes" {
		t.Errorf("%v, want an InvalidValueError wrapping the one problem", err)
	}
}

func TestInvalid(t *testing.T) {
	keyErr := errors.New("key does not match the value")
	var ive *api.InvalidValueError
	if err := validate.Invalid(keyErr); !errors.As(err, &ive) || len(ive.InvalidFields) != 0 || !errors.Is(err, keyErr) {
		t.Errorf("Invalid(%v) = %v, want an InvalidValueError without fields wrapping it", keyErr, err)
	}
	modelErr := &models.ValidationError{Model: "vpp.l3.ARPEntry", Fields: []models.FieldError{{Field: "ip_address", Problem: "required"}}}
	if err := validate.Invalid(modelErr); !errors.As(err, &ive) || !slices.Equal(ive.InvalidFields, []string{"ip_address"}) {
		t.Errorf("Invalid(%v) = %v, want an InvalidValueError naming ip_address", modelErr, err)
	}
}
