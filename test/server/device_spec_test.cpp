// izwi-server --device (izwi/server/device.hpp): the flag's grammar, and what
// a build without OpenCL says. This executable links izwi::server alone, so
// it is such a build (IZWI_WITH_OPENCL undefined, header-only) everywhere;
// the OpenCL side is tested in registry_test.cpp and e2e/device.test.mjs.
#include <catch2/catch.hpp>

#include <string>

#include "izwi/server/device.hpp"

using izwi::server::DeviceSpec;
using izwi::server::parse_device_spec;

namespace {

std::string refusal(std::string_view text) {
  try {
    parse_device_spec(text);
  } catch (const izwi::invalid_argument& e) {
    CHECK(e.field() == "device");
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("device flag: cpu, opencl and opencl:P:D are read", "[server][device]") {
  const DeviceSpec cpu = parse_device_spec("cpu");
  CHECK(cpu.kind == DeviceSpec::Kind::cpu);
  CHECK_FALSE(cpu.platform);
  CHECK(to_string(cpu) == "cpu");

  const DeviceSpec any = parse_device_spec("opencl");
  CHECK(any.kind == DeviceSpec::Kind::opencl);
  CHECK_FALSE(any.platform);
  CHECK_FALSE(any.device);
  CHECK(to_string(any) == "opencl");

  const DeviceSpec chosen = parse_device_spec("opencl:2:13");
  CHECK(chosen.kind == DeviceSpec::Kind::opencl);
  CHECK(chosen.platform == 2u);
  CHECK(chosen.device == 13u);
  CHECK(to_string(chosen) == "opencl:2:13");
  CHECK(to_string(parse_device_spec("opencl:9:9")) == "opencl:9:9");  // parses; opening it is what fails
}

TEST_CASE("device flag: anything else is refused, naming the text and the forms", "[server][device]") {
  for (const char* bad : {"gpu", "", "CPU", "cuda", "opencl0", "openclx", "cpu:0", "opencl:", "opencl:0",
                          "opencl:0:", "opencl::0", "opencl:a:0", "opencl:0:b", "opencl:-1:0", "opencl:+1:0",
                          "opencl:0:0:0", "opencl: 0:0", "opencl:99999999999999999999:0"}) {
    INFO(bad);
    const std::string message = refusal(bad);
    CHECK(message != "accepted");
    std::string quoted(1, '\'');  // every text here is shorter than the 64 characters the message quotes
    quoted.append(bad).push_back('\'');
    CHECK(message.find(quoted) != std::string::npos);
    CHECK(message.find("cpu, opencl or opencl:PLATFORM:DEVICE") != std::string::npos);
  }
  CHECK(refusal("gpu").find("not a device kind") != std::string::npos);
  CHECK(refusal("opencl:0").find("no device") != std::string::npos);
  CHECK(refusal("opencl:x:0").find("not a number") != std::string::npos);
}

TEST_CASE("a build without OpenCL opens the CPU and names why it cannot open OpenCL", "[server][device]") {
  REQUIRE_FALSE(izwi::server::built_with_opencl());  // izwi::server alone: see the top of this file
  const izwi::server::ServingDevice cpu = izwi::server::open_device(parse_device_spec("cpu"));
  CHECK(cpu.name == "cpu");
  CHECK(cpu.opencl_context == nullptr);
  for (const char* spec : {"opencl", "opencl:0:0"}) {
    INFO(spec);
    try {
      izwi::server::open_device(parse_device_spec(spec));
      FAIL("opened");
    } catch (const izwi::unavailable& e) {
      CHECK(std::string(e.what()).find("built without OpenCL") != std::string::npos);
    }
  }
  const auto devices = izwi::server::list_devices();
  REQUIRE(devices.size() == 2u);
  CHECK(devices[0] == "cpu");
  CHECK(devices[1].find("built without OpenCL") != std::string::npos);
}
