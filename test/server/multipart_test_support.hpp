#pragma once
// A multipart/form-data writer for tests and fuzz seeds: what a well-behaved
// client (curl, the OpenAI SDK) sends.

#include <optional>
#include <string>
#include <vector>

namespace izwi_multipart_test {

struct Field {
  std::string name;
  std::optional<std::string> filename;
  std::optional<std::string> content_type;
  std::string content;
};

inline std::string encode(const std::string& boundary, const std::vector<Field>& fields) {
  std::string body;
  for (const Field& field : fields) {
    body += "--" + boundary + "\r\n";
    body += "Content-Disposition: form-data; name=\"" + field.name + "\"";
    if (field.filename) body += "; filename=\"" + *field.filename + "\"";
    body += "\r\n";
    if (field.content_type) body += "Content-Type: " + *field.content_type + "\r\n";
    body += "\r\n";
    body += field.content;
    body += "\r\n";
  }
  body += "--" + boundary + "--\r\n";
  return body;
}

}  // namespace izwi_multipart_test
