#pragma once
// The CSS and the JavaScript every report page carries inline.
namespace posixtrace::cli {

const char *report_style();
const char *report_script();

} // namespace posixtrace::cli
