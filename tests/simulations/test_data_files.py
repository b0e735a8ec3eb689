"""Reading identification data files: values exact, mistakes explained in the user's terms."""

import numpy as np
import pytest

from privacy.errors import DimensionError, NonFiniteError, ParameterError
from simulations.data_files import load_identification_data, read_npz_data, read_samples_csv


@pytest.fixture
def table():
    """Samples with heavy tails and an offset (rows = samples), exactly representable in CSV."""
    rng = np.random.default_rng(5)
    return 3.0 + rng.standard_t(2, size=(40, 3)) * 10.0 ** rng.integers(-6, 6, size=(40, 3))


@pytest.mark.parametrize(("delimiter", "header"), [
    (",", ""), (";", ""), ("\t", ""), (" ", ""), (",", "x1,x2,x3"), (";", "time;a;b"),
    (",", "# comment line"),
])
def test_csv_round_trip(tmp_path, table, delimiter, header):
    path = tmp_path / "x.csv"
    np.savetxt(path, table, delimiter=delimiter, header=header, comments="", fmt="%.17g")
    np.testing.assert_array_equal(read_samples_csv(path), table)


def test_single_column_csv_is_one_channel(tmp_path, table):
    path = tmp_path / "u.csv"
    np.savetxt(path, table[:, 0], fmt="%.17g")
    assert read_samples_csv(path).shape == (40, 1)


@pytest.mark.parametrize(("text", "error", "message"), [
    ("1,2\n3,4\n5,x\n", ParameterError, "line 3, column 2: 'x' is not a number"),
    ("a,b\n1,2\n3\n", DimensionError, "line 3 has 1 cells; the header has 2"),
    ("1;2\n3;nan\n", NonFiniteError, "line 2 holds a NaN"),
    ("1,5;2,5\n", ParameterError, "',' as decimal mark"),
    # a decimal comma after a first row without one: named as read_data names it
    ("a;b\n1;2\n3;2,5\n", ParameterError, "line 3, 'b': '2,5' has a decimal comma"),
    ("x,y\n\n", ParameterError, "has a header line and no row"),
    ("1,2\n3,4,\n", DimensionError, r"line 2 has 3 cells; the first row has 2 \(it ends in a "
                                     r"trailing ',': an empty last value\): '3,4,'"),
    # the first row is the odd one: named, not every row after it
    ("1,2,\n3,4\n", DimensionError, r"line 1 ends in a trailing ',' \(an empty last value\) "
                                     r"and line 2 does not: '1,2,'"),
    ("a;b\n1;2\n3;;4\n", DimensionError, "line 3 has 3 cells; the header has 2"),
    ("a;b\n1;2\n;4\n", ParameterError, "line 3 holds an empty value"),
])
def test_csv_errors_name_file_and_line(tmp_path, text, error, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(error, match=message) as info:
        read_samples_csv(path)
    assert "bad.csv" in str(info.value)


def test_npz_one_dimensional_arrays_are_single_channels(tmp_path):
    path = tmp_path / "d.npz"
    np.savez(path, X=np.arange(11.0), U=np.ones(10))
    X, U = read_npz_data(path)
    assert X.shape == (1, 11) and U.shape == (1, 10)
    np.testing.assert_array_equal(X[0], np.arange(11.0))


@pytest.mark.parametrize(("arrays", "error", "message"), [
    ({"U": np.zeros((1, 10))}, ParameterError, r"lacks the array X \(it holds \['U'\]\)"),
    ({"X": np.zeros((2, 11)), "U": np.array(["a"] * 10)}, ParameterError, "dtype"),
    ({"X": np.zeros((2, 3, 11)), "U": np.zeros((1, 10))}, DimensionError, "2-D"),
    ({"X": np.full((2, 11), np.nan), "U": np.zeros((1, 10))}, NonFiniteError, "22 NaN"),
    ({"X": np.zeros((2, 11)), "U": np.zeros((1, 11))}, DimensionError, "one sample more"),
    ({"X": np.zeros((2, 11)), "U": np.zeros((1, 7))}, DimensionError, "exactly one sample more"),
    ({"X": np.zeros((11, 2)), "U": np.zeros((10, 1))}, DimensionError, "look transposed"),
    ({"X": np.zeros((2, 11)), "U": np.zeros((1, 10)), "Y": np.zeros((2, 10)),
      "dt": np.array(0.5)}, ParameterError, r"holds array\(s\) \['Y', 'dt'\] besides X and U"),
])
def test_npz_errors(tmp_path, arrays, error, message):
    path = tmp_path / "d.npz"
    np.savez(path, **arrays)
    with pytest.raises(error, match=message):
        read_npz_data(path)


def test_an_npz_without_inputs_is_an_autonomous_record(tmp_path):
    # m = 0 (plain DMD), as the Python API takes U with zero rows
    path = tmp_path / "d.npz"
    np.savez(path, X=np.arange(22.0).reshape(2, 11))
    X, U = read_npz_data(path)
    assert X.shape == (2, 11) and U.shape == (0, 10)
    np.savez(path, X=np.zeros((2, 1)))
    with pytest.raises(DimensionError, match="at least two samples"):
        read_npz_data(path)


@pytest.mark.parametrize("y_samples", [10, 11])
def test_measured_outputs_may_have_as_many_samples_as_the_inputs(tmp_path, y_samples):
    path = tmp_path / "d.npz"
    np.savez(path, X=np.ones((1, y_samples)), U=np.ones((2, 10)))
    Y, U = read_npz_data(path, outputs=True)
    assert Y.shape == (1, y_samples) and U.shape == (2, 10)
    if y_samples == 10:          # states still need the state after the last input
        with pytest.raises(DimensionError, match="the states need one sample more"):
            read_npz_data(path)


@pytest.mark.parametrize(("arrays", "message"), [
    ({"X": np.ones((1, 7)), "U": np.ones((1, 10))}, "as many samples as the inputs"),
    ({"X": np.ones((10, 1)), "U": np.ones((10, 1))}, "look transposed"),
])
def test_output_sample_counts_that_do_not_fit_are_refused(tmp_path, arrays, message):
    path = tmp_path / "d.npz"
    np.savez(path, **arrays)
    with pytest.raises(DimensionError, match=message):
        read_npz_data(path, outputs=True)


def test_pickled_npz_is_refused_without_unpickling(tmp_path):
    path = tmp_path / "d.npz"
    np.savez(path, X=np.zeros((1, 3)), U=np.array([{"evil": 1}, None], dtype=object))
    with pytest.raises(ParameterError, match="cannot read .* numeric arrays"):
        read_npz_data(path)


def test_npy_file_is_not_an_npz(tmp_path):
    path = tmp_path / "d.npy"
    np.save(path, np.zeros((2, 3)))
    with pytest.raises(ParameterError, match="is not an .npz archive: "):
        read_npz_data(path)


def test_sources_must_be_one_npz_or_two_csv(tmp_path):
    with pytest.raises(ParameterError, match="both"):
        load_identification_data(states=tmp_path / "x.csv")
    with pytest.raises(ParameterError, match="not both"):
        load_identification_data(tmp_path / "d.npz", inputs=tmp_path / "u.csv")
    with pytest.raises(FileNotFoundError, match="no such data file"):
        load_identification_data(tmp_path / "d.npz")


def test_csv_pair_is_transposed_to_time_on_columns(tmp_path, table):
    np.savetxt(tmp_path / "x.csv", table, delimiter=",", fmt="%.17g")
    np.savetxt(tmp_path / "u.csv", table[:-1, :2], delimiter=",", fmt="%.17g")
    X, U = load_identification_data(states=tmp_path / "x.csv", inputs=tmp_path / "u.csv")
    np.testing.assert_array_equal(X, table.T)
    np.testing.assert_array_equal(U, table[:-1, :2].T)
