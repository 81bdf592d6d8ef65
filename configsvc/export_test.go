package configsvc

import "reflect"

// fieldKeys returns the json names of Config's fields in declaration order.
func fieldKeys() []string {
	t := reflect.TypeOf(Config{})
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i] = jsonName(t.Field(i))
	}
	return keys
}
