#include <catch2/catch.hpp>

#include <izwi/audio/mel.hpp>
#include <izwi/core/error.hpp>

#include "reference_tools.hpp"

#include <iostream>

using namespace izwi::audio;

TEST_CASE("Slaney mel scale: linear to 1 kHz, 27 mels per factor 6.4 above, and invertible", "[mel]") {
  CHECK(hz_to_mel(0.0, MelScale::slaney) == 0.0);
  CHECK(hz_to_mel(1000.0, MelScale::slaney) == Approx(15.0));
  CHECK(hz_to_mel(6400.0, MelScale::slaney) == Approx(15.0 + 27.0));
  CHECK(hz_to_mel(500.0, MelScale::slaney) == Approx(7.5));
  CHECK(hz_to_mel(1000.0, MelScale::htk) == Approx(2595.0 * std::log10(1.0 + 1000.0 / 700.0)));
  for (double hz : {0.0, 123.0, 999.0, 1000.0, 4321.0, 8000.0}) {
    for (auto scale : {MelScale::slaney, MelScale::htk}) {
      CHECK(mel_to_hz(hz_to_mel(hz, scale), scale) == Approx(hz).margin(1e-9));
    }
  }
}

TEST_CASE("mel filterbank matches Whisper's published mel_filters.npz (mel_80, mel_128)", "[mel][reference]") {
  const auto npz = izwi_test::fixtures_dir() / "whisper" / "mel_filters.npz";
  const auto python = izwi_test::python_with_numpy();
  if (!std::filesystem::exists(npz) || !python) {
    const char* reason = !python ? "no python3 with numpy (install python3-numpy)" : "fixture mel_filters.npz missing";
    std::cout << "SKIPPED: mel filterbank vs mel_filters.npz: " << reason << "\n";
    WARN("skipped: " << reason);
    return;
  }
  const auto dir = izwi_test::work_dir() / "filters";
  std::filesystem::create_directories(dir);
  REQUIRE(izwi_test::run_command(izwi_test::quoted(*python) + " " +
                                 izwi_test::quoted(izwi_test::script_path("whisper_log_mel_reference.py").string()) +
                                 " filters " + izwi_test::quoted(npz.string()) + " " +
                                 izwi_test::quoted(dir.string())));
  for (std::size_t n_mels : {80u, 128u}) {
    const auto expected = izwi_test::read_f32(dir / ("mel_" + std::to_string(n_mels) + ".f32"));
    const MelFilterbank bank({.n_mels = n_mels});
    const auto computed = bank.dense();
    REQUIRE(expected.size() == n_mels * 201);
    REQUIRE(computed.size() == expected.size());
    float worst = 0, largest = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      worst = std::max(worst, std::abs(computed[i] - expected[i]));
      largest = std::max(largest, expected[i]);
    }
    std::cout << "mel_" << n_mels << ": max |izwi - mel_filters.npz| = " << worst << " (largest weight " << largest
              << ")\n";
    CHECK(worst < 1e-6f);

    // Sparse storage: each band holds the whole non-zero part of its row.
    for (std::size_t m = 0; m < n_mels; ++m) {
      for (std::size_t k = 0; k < 201; ++k) {
        const bool inside = k >= bank.first_bin(m) && k < bank.first_bin(m) + bank.band(m).size();
        if (!inside) REQUIRE(expected[m * 201 + k] == 0.0f);
      }
    }
  }
}

TEST_CASE("mel filterbank apply equals the dense matrix product", "[mel]") {
  const MelFilterbank bank({.n_mels = 128});
  std::vector<float> power(bank.n_bins());
  for (std::size_t k = 0; k < power.size(); ++k) power[k] = 1.0f + static_cast<float>(k % 7);
  std::vector<float> energies(bank.n_mels());
  bank.apply(power, energies);
  const auto dense = bank.dense();
  for (std::size_t m = 0; m < bank.n_mels(); ++m) {
    double expected = 0;
    for (std::size_t k = 0; k < bank.n_bins(); ++k) expected += double(dense[m * bank.n_bins() + k]) * power[k];
    CHECK(energies[m] == Approx(expected).epsilon(1e-5));
  }
  std::vector<float> wrong(bank.n_mels() - 1);
  CHECK_THROWS_AS(bank.apply(power, wrong), izwi::invalid_argument);
}

TEST_CASE("mel filterbank rejects impossible options, naming the field", "[mel]") {
  auto field_of = [](const MelFilterbankOptions& options) {
    try {
      MelFilterbank bank(options);
    } catch (const izwi::invalid_argument& e) {
      return e.field();
    }
    return std::string("(none)");
  };
  CHECK(field_of({.n_mels = 0}) == "n_mels");
  CHECK(field_of({.n_fft = 0}) == "n_fft");
  CHECK(field_of({.sample_rate = 0.0}) == "sample_rate");
  CHECK(field_of({.f_min = 9000.0, .f_max = 8000.0}) == "f_min");
  CHECK(field_of({.n_mels = 40, .n_fft = 512, .sample_rate = 22050, .f_max = 11025}) == "(none)");
}
