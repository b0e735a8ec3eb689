"""quiet_logger: records below the level are dropped inside the block, the level restored after."""

import logging

import pytest

from _toolbox.logs import quiet_logger


def test_drops_records_below_the_level_and_keeps_those_above(caplog):
    logger = logging.getLogger("tests.quiet.drop")
    with caplog.at_level(logging.DEBUG, logger="tests.quiet.drop"):
        logger.setLevel(logging.DEBUG)
        with quiet_logger("tests.quiet.drop", logging.ERROR):
            logger.warning("dropped")
            logger.error("kept")
        logger.warning("after")
    assert [r.getMessage() for r in caplog.records] == ["kept", "after"]


def test_restores_the_level_when_the_block_raises():
    logger = logging.getLogger("tests.quiet.raise")
    logger.setLevel(logging.INFO)
    with pytest.raises(RuntimeError), quiet_logger("tests.quiet.raise", logging.CRITICAL):
        assert logger.level == logging.CRITICAL
        raise RuntimeError("inside")
    assert logger.level == logging.INFO


def test_never_makes_a_logger_louder_than_its_caller_had_it():
    logger = logging.getLogger("tests.quiet.louder")
    logger.setLevel(logging.CRITICAL)
    with quiet_logger("tests.quiet.louder", logging.ERROR):
        assert logger.level == logging.CRITICAL
    assert logger.level == logging.CRITICAL
